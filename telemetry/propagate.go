package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// Join returns ctx under the trace that TRACEPARENT and TRACESTATE name in
// the environment (a CI job's, a parent process's), so that a run started
// there is a span of that trace. Without them, or with a malformed
// TRACEPARENT, ctx is returned as it is and the run starts a trace of its
// own.
func Join(ctx context.Context, lookup func(string) (string, bool)) context.Context {
	tp, ok := lookup("TRACEPARENT")
	if !ok || tp == "" {
		return ctx
	}
	ts, _ := lookup("TRACESTATE")
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": ts})
}
