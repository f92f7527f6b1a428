package provider

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// WithTraceContext returns req carrying the W3C trace context of the span
// in its context (traceparent, tracestate), so that the model's server can
// join the run's trace; req itself when its context has no span. The
// request is cloned first: a RoundTripper must not change the one it was
// given.
func WithTraceContext(req *http.Request) *http.Request {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return req
	}
	req = req.Clone(req.Context())
	propagation.TraceContext{}.Inject(req.Context(), propagation.HeaderCarrier(req.Header))
	return req
}
