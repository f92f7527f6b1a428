package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/decisionlog"
	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/telemetry"
)

// observeFlags are the command-line side of telemetry and decision logs.
type observeFlags struct {
	decisionLog string
	metricsAddr string
}

func (f *observeFlags) add(cmd *cobra.Command, longRunning bool) {
	cmd.Flags().StringVar(&f.decisionLog, "decision-log", "", "append every gate decision to `FILE` in OPA's decision-log format (replaces the decision_log block's path)")
	if longRunning {
		cmd.Flags().StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`HOST:PORT`/metrics while the process runs")
	}
}

// observation is what a command set up for one engine's telemetry and
// decision log: the engine options that carry them, the context a run
// starts from (under TRACEPARENT's trace, when the environment names one),
// and close, which exports what is left and closes the log.
type observation struct {
	tel *telemetry.Telemetry
	log *decisionlog.Writer
}

// observe sets up the telemetry p's telemetry block and the OTEL_*
// environment configure (p may be nil: the environment only), and the
// decision log the flag or the block names (a block's path is relative to
// baseDir). An exporter that cannot be set up stops the command only under
// on_failure = "fail"; a decision log that cannot be opened always does.
func observe(ctx context.Context, p *plan.Plan, baseDir string, f observeFlags, stderr io.Writer) (*observation, error) {
	var block *plan.Telemetry
	var logPath string
	if p != nil {
		block = p.Settings.Telemetry
		if d := p.Settings.DecisionLog; d != nil && d.Path != "" {
			logPath = d.Path
			if !filepath.IsAbs(logPath) {
				logPath = filepath.Join(baseDir, logPath)
			}
		}
	}
	if f.decisionLog != "" {
		logPath = f.decisionLog
	}
	cfg, err := telemetry.Configure(block, os.LookupEnv)
	if err != nil {
		if cfg.Fail {
			return nil, exitWith(exitInvalid, "telemetry: %v", err)
		}
		fmt.Fprintf(stderr, "symbi: telemetry: %v\n", err)
		if !cfg.On() {
			cfg = telemetry.Config{}
		}
	}
	o := &observation{}
	o.tel, err = telemetry.Start(ctx, cfg, telemetry.Options{Version: symbiVersion(), Stderr: stderr, MetricsAddr: f.metricsAddr})
	if err != nil {
		return nil, exitWith(exitFailure, "%v", err)
	}
	if logPath != "" {
		if o.log, err = decisionlog.Open(logPath); err != nil {
			o.tel.Shutdown(ctx)
			return nil, exitWith(exitInvalid, "%v", err)
		}
	}
	return o, nil
}

// apply puts the telemetry and the decision log into engine options.
func (o *observation) apply(opts *engine.Options) {
	if o == nil {
		return
	}
	if o.tel.Tracer != nil {
		opts.Tracer = o.tel.Tracer
	}
	if o.tel.Meter != nil {
		opts.Meter = o.tel.Meter
	}
	opts.CaptureContent = o.tel.CaptureContent
	opts.DecisionLog = o.log
	opts.Version = symbiVersion()
	if o.log != nil {
		// No builtin file tool may write or read the decision log.
		opts.Protected = append(opts.Protected, o.log.Path())
	}
}

// join is ctx under the trace TRACEPARENT names, when telemetry is on.
func (o *observation) join(ctx context.Context) context.Context {
	if o == nil || o.tel.Tracer == nil {
		return ctx
	}
	return telemetry.Join(ctx, os.LookupEnv)
}

// close exports what is left (never longer than telemetry.Shutdown allows)
// and closes the decision log; an error is the log's.
func (o *observation) close() error {
	if o == nil {
		return nil
	}
	o.tel.Shutdown(context.Background())
	if o.log != nil {
		return o.log.Close()
	}
	return nil
}
