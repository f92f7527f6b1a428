package engine

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/provider/fakeserver"
	"github.com/symbi-dev/symbi/telemetry"
)

// BenchmarkReactLoop100Tracing is BenchmarkReactLoop100's 100-iteration
// react run against the local fake server, with tracing and metrics on
// (telemetry as symbi run sets it up: OTLP over http/protobuf to a local
// collector, the SDK's default batching) and off, alternating in one
// run; it reports the median of the per-pair ratios (on/off), the loop's
// overhead of telemetry. The collector is an HTTP server on loopback that
// reads and acknowledges every export, or the Jaeger SYMBI_JAEGER_OTLP
// names (its OTLP http/protobuf base URL) when set.
//
//	go test -run '^$' -bench ReactLoop100Tracing -benchtime 20x ./engine/
func BenchmarkReactLoop100Tracing(b *testing.B) {
	const iterations = 100
	var exports, spanBytes atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exports.Add(1)
		spanBytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	endpoint := collector.URL
	if j := os.Getenv("SYMBI_JAEGER_OTLP"); j != "" {
		endpoint = j
	}
	cfg, err := telemetry.Configure(nil, func(k string) (string, bool) {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return endpoint, true
		}
		return "", false
	})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Fail = true
	tel, err := telemetry.Start(context.Background(), cfg, telemetry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())

	srv := fakeserver.New(b, fakeserver.WithHandler(counting(iterations)), fakeserver.WithoutHistory())
	p, dir := fixture{"main.hcl": benchHCL(srv.URL(), iterations)}.compile(b)
	noEnv := func(string) (string, bool) { return "", false }
	off, err := New(p, Options{BaseDir: dir, StateDir: b.TempDir(), LookupEnv: noEnv})
	if err != nil {
		b.Fatal(err)
	}
	defer off.Close()
	on, err := New(p, Options{BaseDir: dir, StateDir: b.TempDir(), LookupEnv: noEnv, Tracer: tel.Tracer, Meter: tel.Meter})
	if err != nil {
		b.Fatal(err)
	}
	defer on.Close()
	ctx := context.Background()
	// The process's CPU time (every goroutine: the loop, the exporter, the
	// fake server and the collector) is measured beside the wall time: on a
	// shared machine it moves far less.
	var cpu time.Duration
	// Each run's loop is labelled telemetry=on or off in a CPU profile
	// (-cpuprofile; pprof -tagfocus telemetry=on): what the loop pays,
	// apart from the exporter's, the collector's and the GC's goroutines.
	label := map[*Engine]context.Context{
		on:  pprof.WithLabels(ctx, pprof.Labels("telemetry", "on")),
		off: pprof.WithLabels(ctx, pprof.Labels("telemetry", "off")),
	}
	run := func(e *Engine) time.Duration {
		pprof.SetGoroutineLabels(label[e])
		defer pprof.SetGoroutineLabels(ctx)
		c0 := processCPU()
		start := time.Now()
		res, err := e.Run(label[e], "a", "count", RunOptions{})
		d := time.Since(start)
		cpu = processCPU() - c0
		if err != nil || res.Termination.Reason != Completed {
			b.Fatalf("%v %v", err, res.Termination)
		}
		return d
	}
	run(off) // warm connections, policy and toolbox outside the timing
	run(on)
	var onTimes, offTimes []time.Duration
	var ratios, cpuRatios []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Each goes first in turn, so neither always pays for the other's
		// garbage or background work.
		var tOn, tOff, cOn, cOff time.Duration
		if i%2 == 0 {
			tOn, cOn = run(on), cpu
			tOff, cOff = run(off), cpu
		} else {
			tOff, cOff = run(off), cpu
			tOn, cOn = run(on), cpu
		}
		onTimes, offTimes = append(onTimes, tOn), append(offTimes, tOff)
		ratios = append(ratios, float64(tOn)/float64(tOff))
		cpuRatios = append(cpuRatios, float64(cOn)/float64(cOff))
	}
	b.StopTimer()
	b.ReportMetric(float64(median(onTimes).Microseconds())/1000, "on-ms/run")
	b.ReportMetric(float64(median(offTimes).Microseconds())/1000, "off-ms/run")
	b.ReportMetric(median(ratios), "on/off")
	b.ReportMetric(median(cpuRatios), "cpu-on/off")
	tel.Shutdown(context.Background())
	if exports.Load() < 2 {
		b.Fatalf("the collector received %d exports: the spans went nowhere", exports.Load())
	}
	b.ReportMetric(float64(spanBytes.Load())/float64(b.N+1), "exported-B/run")
}

// BenchmarkReactLoop100Telemetry is BenchmarkReactLoop100Tracing's run
// with telemetry off or on, one of them a process: b.N runs of one engine,
// nothing else. It is for counters that do not move with the machine's
// load, which count a whole process: instructions under callgrind, whose
// per-run figure is the difference between two -benchtime counts divided
// by the difference in runs (the setup cancels out).
//
//	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind engine.test \
//	    -test.run '^$' -test.bench 'ReactLoop100Telemetry/on' -test.benchtime 5x
func BenchmarkReactLoop100Telemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			const iterations = 100
			opts := Options{StateDir: b.TempDir(), LookupEnv: func(string) (string, bool) { return "", false }}
			if on {
				collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/x-protobuf")
				}))
				defer collector.Close()
				cfg, err := telemetry.Configure(nil, func(k string) (string, bool) {
					if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
						return collector.URL, true
					}
					return "", false
				})
				if err != nil {
					b.Fatal(err)
				}
				cfg.Fail = true
				tel, err := telemetry.Start(context.Background(), cfg, telemetry.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer tel.Shutdown(context.Background())
				opts.Tracer, opts.Meter = tel.Tracer, tel.Meter
			}
			srv := fakeserver.New(b, fakeserver.WithHandler(counting(iterations)), fakeserver.WithoutHistory())
			p, dir := fixture{"main.hcl": benchHCL(srv.URL(), iterations)}.compile(b)
			opts.BaseDir = dir
			e, err := New(p, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				res, err := e.Run(ctx, "a", "count", RunOptions{})
				if err != nil || res.Termination.Reason != Completed {
					b.Fatalf("%v %v", err, res.Termination)
				}
			}
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
