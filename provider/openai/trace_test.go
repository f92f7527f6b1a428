package openai

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/provider"

	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestTraceparent: a request made under a span carries its W3C trace
// context, so the model's server can join the run's trace; one made
// without carries none.
func TestTraceparent(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"a"}}, fakeserver.Reply{Chunks: []string{"b"}})
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if _, err := s.model.Stream(ctx, ask("x"), func(provider.Event) {}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.call(t, ask("y")); err != nil {
		t.Fatal(err)
	}
	reqs := s.server.Requests()
	if got, want := reqs[0].Header.Get("traceparent"), "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"; got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
	if got := reqs[1].Header.Get("traceparent"); got != "" {
		t.Errorf("a request without a span sent traceparent %q", got)
	}
}
