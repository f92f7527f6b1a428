package builtins

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is the W3C trace context of the span in ctx, by its header
// names (traceparent, and tracestate when there is one), for a tool to
// join the run's trace: an http tool's request headers, a command tool's
// TRACEPARENT and TRACESTATE, an MCP request's _meta. Nil when ctx has no
// span (telemetry is off).
func traceContext(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c
}

// Call is one tool call as it starts, for Options.Observe.
type Call struct {
	Tool      string
	CallID    string
	Arguments json.RawMessage
	Info      Info
}

// CallEnd is how one call ended, for Options.Observe: its result or
// failure, and its circuit breaker's state before and after it (equal
// when the call changed nothing, empty when the tool has none).
type CallEnd struct {
	Result        Result
	Err           error
	BreakerBefore BreakerState
	BreakerAfter  BreakerState
}

type callIDKey struct{}

// callIDOf is the id of the call callApproved is running, for Observe.
func callIDOf(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}
