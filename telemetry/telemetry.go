package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options are what Start needs besides the Config.
type Options struct {
	// Version is symbi's version, the resource's service.version.
	Version string
	// Stderr receives the console exporters' lines and the warnings about
	// exports that failed.
	Stderr io.Writer
	// MetricsAddr, when set, serves the metrics in Prometheus's format at
	// http://MetricsAddr/metrics for as long as the process runs
	// (--metrics-addr).
	MetricsAddr string
	// Grace is how long Shutdown waits, past the end of the run, for a
	// collector that has not answered yet; default 250ms.
	Grace time.Duration
}

// Telemetry is the OpenTelemetry of one process.
type Telemetry struct {
	// Tracer is nil when traces are off; Meter nil when metrics are off.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// CaptureContent is Config.CaptureContent.
	CaptureContent bool

	cfg    Config
	opts   Options
	tp     tracerProvider
	mp     *sdkmetric.MeterProvider
	probes []*probe
	server *http.Server
	// MetricsURL is where the Prometheus endpoint listens, when it does.
	MetricsURL string

	exportErrs atomic.Int64
	firstErr   atomic.Pointer[error]
}

// tracerProvider is the SDK's TracerProvider or a spanProvider.
type tracerProvider interface {
	trace.TracerProvider
	Shutdown(context.Context) error
	ForceFlush(context.Context) error
}

// probe is one exporter's first contact with its collector: an empty
// export, sent as the process starts, in the background. Shutdown trusts
// a collector that answered it with the time a full export needs, and
// spends no more than the grace on one that did not.
type probe struct {
	signal, endpoint string
	timeout          time.Duration
	done             chan struct{}
	err              error
}

func startProbe(signal, endpoint string, timeout time.Duration, send func(context.Context) error) *probe {
	p := &probe{signal: signal, endpoint: endpoint, timeout: timeout, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		p.err = send(ctx)
	}()
	return p
}

// Start sets up what cfg configures: nothing when it is off. With
// cfg.Fail, an exporter that cannot be built or a collector that does not
// answer its first (empty) export within the export timeout is an error;
// otherwise such a collector only loses the spans, with a warning at
// Shutdown.
func Start(ctx context.Context, cfg Config, opts Options) (*Telemetry, error) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Grace <= 0 {
		opts.Grace = 250 * time.Millisecond
	}
	t := &Telemetry{cfg: cfg, opts: opts, CaptureContent: cfg.CaptureContent}
	if !cfg.On() && opts.MetricsAddr == "" {
		return t, nil
	}
	// An export that fails in the background is counted for Shutdown's
	// warning, not printed in the middle of the run's output, which is
	// where the SDK's default handler would print it.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(t.handle))
	res := t.resource()
	fail := func(err error) (*Telemetry, error) {
		t.shutdownNow()
		return nil, err
	}
	if cfg.Traces.On() {
		var (
			batchers []*spanBatcher
			others   []sdktrace.SpanExporter
		)
		for _, name := range cfg.Traces.Exporters {
			exp, err := t.spanExporter(ctx, name)
			if err != nil {
				if cfg.Fail {
					return fail(err)
				}
				fmt.Fprintf(opts.Stderr, "symbi: telemetry: %v; traces are not exported\n", err)
				continue
			}
			if se, ok := exp.(*spanExporter); ok {
				batchers = append(batchers, newSpanBatcher(se, cfg.Batch))
				continue
			}
			others = append(others, exp)
		}
		// The OTLP exporter alone, the usual configuration, gets
		// symbi's spans (tracer.go); anything else the SDK's.
		var sp *spanProvider
		if len(batchers) == 1 && len(others) == 0 {
			sp = newSpanProvider(res, sampler(cfg), sdktrace.NewSpanLimits(), batchers[0])
		}
		if sp != nil {
			t.tp = sp
		} else {
			tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sampler(cfg))}
			for _, b := range batchers {
				tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(b))
			}
			for _, exp := range others {
				tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
			}
			t.tp = sdktrace.NewTracerProvider(tpOpts...)
		}
		t.Tracer = t.tp
	}
	if cfg.Metrics.On() || opts.MetricsAddr != "" {
		mpOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
		for _, name := range cfg.Metrics.Exporters {
			r, err := t.metricReader(ctx, name)
			if err != nil {
				if cfg.Fail {
					return fail(err)
				}
				fmt.Fprintf(opts.Stderr, "symbi: telemetry: %v; metrics are not exported\n", err)
				continue
			}
			mpOpts = append(mpOpts, sdkmetric.WithReader(r))
		}
		if opts.MetricsAddr != "" {
			r, err := t.serveMetrics(opts.MetricsAddr)
			if err != nil {
				return fail(err) // asked for on the command line: never ignored
			}
			mpOpts = append(mpOpts, sdkmetric.WithReader(r))
		}
		t.mp = sdkmetric.NewMeterProvider(mpOpts...)
		t.Meter = t.mp
	}
	if cfg.Fail {
		for _, p := range t.probes {
			select {
			case <-p.done:
			case <-ctx.Done():
				return fail(ctx.Err())
			}
			if p.err != nil {
				return fail(fmt.Errorf("telemetry: the %s collector at %s did not answer: %w (on_failure = \"fail\")", p.signal, p.endpoint, p.err))
			}
		}
	}
	return t, nil
}

func (t *Telemetry) handle(err error) {
	t.exportErrs.Add(1)
	t.firstErr.CompareAndSwap(nil, &err)
}

func (t *Telemetry) resource() *resource.Resource {
	attrs := []attribute.KeyValue{
		attribute.String("telemetry.sdk.name", "opentelemetry"),
		attribute.String("telemetry.sdk.language", "go"),
		attribute.String("telemetry.sdk.version", otel.Version()),
	}
	for k, v := range t.cfg.ResourceAttributes {
		attrs = append(attrs, attribute.String(k, v))
	}
	attrs = append(attrs, attribute.String("service.name", t.cfg.ServiceName))
	if t.opts.Version != "" {
		attrs = append(attrs, attribute.String("service.version", t.opts.Version))
	}
	return resource.NewSchemaless(attrs...)
}

func sampler(cfg Config) sdktrace.Sampler {
	switch cfg.Sampler {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(cfg.SamplerArg)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SamplerArg))
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

func (t *Telemetry) spanExporter(ctx context.Context, name string) (sdktrace.SpanExporter, error) {
	s := t.cfg.Traces
	switch name {
	case Console:
		return stdouttrace.New(stdouttrace.WithWriter(t.opts.Stderr))
	case OTLP:
		c, err := newOTLPClient(s, grpcTraceMethod, s.Compression)
		if err != nil {
			return nil, err
		}
		t.probes = append(t.probes, startProbe("trace", c.url, s.Timeout, func(ctx context.Context) error {
			return c.export(ctx, nil) // an empty Export request
		}))
		return &spanExporter{c: c}, nil
	}
	return nil, fmt.Errorf("unknown trace exporter %q", name)
}

func (t *Telemetry) metricReader(ctx context.Context, name string) (sdkmetric.Reader, error) {
	s := t.cfg.Metrics
	switch name {
	case Console:
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(t.opts.Stderr))
		if err != nil {
			return nil, err
		}
		return sdkmetric.NewPeriodicReader(exp), nil
	case Prometheus:
		return nil, errors.New("OTEL_METRICS_EXPORTER=prometheus: serve the metrics with --metrics-addr HOST:PORT")
	case OTLP:
		c, err := newOTLPClient(s, grpcMetricMethod, s.Compression)
		if err != nil {
			return nil, err
		}
		t.probes = append(t.probes, startProbe("metric", c.url, s.Timeout, func(ctx context.Context) error {
			return c.export(ctx, nil)
		}))
		return sdkmetric.NewPeriodicReader(&metricExporter{c: c}), nil
	}
	return nil, fmt.Errorf("unknown metric exporter %q", name)
}

// Shutdown exports what is left and stops everything, within ctx. An
// exporter whose collector answered the first export gets up to its
// export timeout; one that has not answered yet gets the grace, and one
// whose collector refused or failed gets none: its spans are dropped, and
// a warning on Stderr says so. A run is never made to wait on a dead or
// hanging collector for longer than the grace.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	deadline := time.Duration(0)
	var dead []string
	// One grace for all the probes, not one each.
	gctx, stop := context.WithTimeout(ctx, t.opts.Grace)
	defer stop()
	for _, p := range t.probes {
		select {
		case <-p.done:
		case <-gctx.Done():
		}
		select {
		case <-p.done:
			if p.err == nil {
				deadline = max(deadline, p.timeout)
				continue
			}
			dead = append(dead, fmt.Sprintf("the %s collector at %s did not answer (%v)", p.signal, p.endpoint, p.err))
		default:
			dead = append(dead, fmt.Sprintf("the %s collector at %s did not answer within %s", p.signal, p.endpoint, t.opts.Grace))
		}
	}
	if len(t.probes) == 0 {
		deadline = DefaultExportTimeout // the console: nothing to wait on
	}
	sctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if len(dead) > 0 && deadline == 0 {
		cancel() // nothing to wait for: drop what is queued
	}
	// Not every exporter's Shutdown honours its context (the OTLP metric
	// exporter's waits for an export in flight, the probe's included): the
	// wait is bounded here, and what is still exporting is left to end
	// with the process.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if t.tp != nil {
			t.tp.Shutdown(sctx)
		}
		if t.mp != nil {
			t.mp.Shutdown(sctx)
		}
	}()
	select {
	case <-done:
	case <-sctx.Done():
	}
	if t.server != nil {
		t.server.Close()
	}
	for _, d := range dead {
		fmt.Fprintf(t.opts.Stderr, "symbi: telemetry: %s; what it was sent is lost\n", d)
	}
	if len(dead) == 0 {
		if p := t.firstErr.Load(); p != nil {
			fmt.Fprintf(t.opts.Stderr, "symbi: telemetry: %d export(s) failed, the first: %v\n", t.exportErrs.Load(), *p)
		}
	}
	// Export failures are reported above, never as the run's failure.
	return nil
}

// shutdownNow stops whatever Start had set up before it failed.
func (t *Telemetry) shutdownNow() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if t.tp != nil {
		t.tp.Shutdown(ctx)
	}
	if t.mp != nil {
		t.mp.Shutdown(ctx)
	}
	if t.server != nil {
		t.server.Close()
	}
}
