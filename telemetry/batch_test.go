package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// bodies is a collector that keeps every request's body; release, when
// set, holds each answer until it is closed.
type bodies struct {
	mu      sync.Mutex
	got     [][]byte
	release chan struct{}
}

func (c *bodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.got = append(c.got, b)
	c.mu.Unlock()
	if c.release != nil {
		<-c.release
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *bodies) requests() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.got...)
}

func newTestBatcher(t *testing.T, c http.Handler, cfg Batch) *spanBatcher {
	t.Helper()
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	client, err := newOTLPClient(Signal{Endpoint: srv.URL + "/v1/traces", Protocol: HTTPProtobuf, Timeout: 5 * time.Second}, grpcTraceMethod, "")
	if err != nil {
		t.Fatal(err)
	}
	return newSpanBatcher(&spanExporter{c: client}, cfg)
}

func sampled(spans []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().IsSampled() {
			out = append(out, s)
		}
	}
	return out
}

// TestSpanBatcherMatchesExport: what the batcher sends, encoding each span
// as it ends, is byte for byte what the exporter sends for the same
// spans (appendExportSpans, which TestEncodeSpansMatchesProto holds to
// proto.Marshal): several resources and scopes, in a flush and in batches
// cut at MaxBatch, each its own request in order.
func TestSpanBatcherMatchesExport(t *testing.T) {
	spans := sampled(sampleSpans())
	for _, max := range []int{len(spans), 2} {
		c := &bodies{}
		b := newTestBatcher(t, c, Batch{MaxBatch: max, Delay: time.Hour})
		for _, s := range sampleSpans() {
			b.OnEnd(s)
		}
		if err := b.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		for i := 0; i < len(spans); i += max {
			req, err := appendExportSpans(nil, spans[i:min(i+max, len(spans))])
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, req)
		}
		got := c.requests()
		if len(got) != len(want) {
			t.Fatalf("batch %d: %d requests, want %d", max, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("batch %d, request %d differs from the exporter's:\n got %x\nwant %x", max, i, got[i], want[i])
			}
		}
		if err := b.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpanBatcherBatching: a full batch is exported without waiting for
// the delay, the rest after it; the queue is bounded and drops what does
// not fit while the collector hangs, never blocking the span's end; a
// span with a string that is not UTF-8 is left out alone; spans that end
// after Shutdown are dropped.
func TestSpanBatcherBatching(t *testing.T) {
	span := func(name string) sdktrace.ReadOnlySpan {
		return tracetest.SpanStub{
			Name:        name,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled}),
			Resource:    resource.NewSchemaless(attribute.String("service.name", "symbi")),
		}.Snapshot()
	}
	wait := func(c *bodies, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(c.requests()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d request(s), want %d", len(c.requests()), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	c := &bodies{}
	b := newTestBatcher(t, c, Batch{MaxBatch: 3, Delay: 200 * time.Millisecond})
	for range 4 {
		b.OnEnd(span("s"))
	}
	wait(c, 1) // the full batch of three
	wait(c, 2) // the fourth, after the delay
	b.OnEnd(span("bad \xff"))
	b.OnEnd(span("good"))
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := c.requests()
	want, _ := appendExportSpans(nil, []sdktrace.ReadOnlySpan{span("good")})
	if len(got) != 3 || !bytes.Equal(got[2], want) || b.dropped.Load() != 1 {
		t.Errorf("%d requests, %d dropped; want the good span alone in a third and one dropped", len(got), b.dropped.Load())
	}
	b.Shutdown(context.Background())
	b.OnEnd(span("late"))
	if n := len(c.requests()); n != 3 {
		t.Errorf("%d requests after a span ended past Shutdown, want 3", n)
	}

	hang := &bodies{release: make(chan struct{})}
	defer close(hang.release)
	b = newTestBatcher(t, hang, Batch{MaxBatch: 2, MaxQueue: 4, Delay: time.Hour})
	b.OnEnd(span("1"))
	b.OnEnd(span("2"))
	wait(hang, 1) // the exporter holds a batch of two, unanswered
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10 {
			b.OnEnd(span("more"))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ending a span blocked on a hanging collector")
	}
	if d := b.dropped.Load(); d != 6 {
		t.Errorf("%d spans dropped, want 6 (a queue of 4 behind the batch in flight)", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.Shutdown(ctx) // what is queued is dropped; Shutdown does not wait
}
