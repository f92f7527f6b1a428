package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// seqIDs is a deterministic IDGenerator: each provider of a comparison
// gets its own, and both are asked for IDs in the same order.
type seqIDs struct {
	mu sync.Mutex
	n  uint64
}

func (g *seqIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	var tid trace.TraceID
	putUint64(tid[8:], n)
	tid[0] = 0xa0 | byte(n&0xf) // spread over TraceIDRatioBased's range
	return tid, g.NewSpanID(ctx, tid)
}

func (g *seqIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	var sid trace.SpanID
	putUint64(sid[:], g.n)
	return sid
}

// noisySampler records only, or samples with attributes and a trace
// state of its own, or drops, by the span's name.
type noisySampler struct{}

func (noisySampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	ts := trace.SpanContextFromContext(p.ParentContext).TraceState()
	switch {
	case len(p.Name) > 0 && p.Name[0] == 'r':
		return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly, Tracestate: ts}
	case len(p.Name) > 0 && p.Name[0] == 'd':
		return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: ts}
	}
	ts, _ = ts.Insert("symbi", "t")
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: ts, Attributes: []attribute.KeyValue{attribute.Bool("sampled.by", true)}}
}

func (noisySampler) Description() string { return "noisy" }

var testSamplers = []sdktrace.Sampler{
	sdktrace.ParentBased(sdktrace.AlwaysSample()),
	noisySampler{},
	sdktrace.TraceIDRatioBased(0.5),
	sdktrace.ParentBased(noisySampler{}),
}

var testLimits = []sdktrace.SpanLimits{
	sdktrace.NewSpanLimits(),
	{AttributeValueLengthLimit: -1, AttributeCountLimit: 3, EventCountLimit: 2, LinkCountLimit: 1, AttributePerEventCountLimit: 1, AttributePerLinkCountLimit: 0},
	{AttributeValueLengthLimit: -1, AttributeCountLimit: 0, EventCountLimit: 0, LinkCountLimit: 0, AttributePerEventCountLimit: 0, AttributePerLinkCountLimit: 1},
	{AttributeValueLengthLimit: -1, AttributeCountLimit: -1, EventCountLimit: -1, LinkCountLimit: -1, AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1},
}

// testAttrs are the attributes a script sets: keys that repeat, an
// invalid one (an empty key), every scalar type and their slices.
var testAttrs = []attribute.KeyValue{
	attribute.String("gen_ai.tool.name", "calculator"),
	attribute.Int("gen_ai.usage.input_tokens", 12),
	attribute.String("gen_ai.tool.name", "search"),
	attribute.Float64("gen_ai.request.temperature", 0.25),
	attribute.Bool("symbi.gate.allowed", false),
	{Key: "", Value: attribute.StringValue("no key")},
	attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop", "tool_calls"}),
	attribute.Int64Slice("ints", []int64{1, -2}),
	attribute.Float64Slice("floats", []float64{0.5}),
	attribute.BoolSlice("bools", []bool{true}),
	attribute.String("symbi.run.id", "RUN.1"),
	attribute.Int("gen_ai.usage.input_tokens", 99),
}

// script drives a TracerProvider with the operations data encodes, all
// with explicit timestamps, and ends every span still open.
func script(tp trace.TracerProvider, data []byte) {
	base := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) }
	tr := tp.Tracer("symbi", trace.WithInstrumentationVersion("test"))
	other := tp.Tracer("other", trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))
	type open struct {
		ctx  context.Context
		span trace.Span
	}
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xf0, 1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	spans := []open{{ctx: context.Background()}, {ctx: trace.ContextWithRemoteSpanContext(context.Background(), remote)}}
	attrs := func(b byte) []attribute.KeyValue {
		i, n := int(b)%len(testAttrs), int(b>>4)%5
		var out []attribute.KeyValue
		for j := range n {
			out = append(out, testAttrs[(i+j)%len(testAttrs)])
		}
		return out
	}
	for i := 0; i+2 < len(data); i += 3 {
		op, a, b := data[i], data[i+1], data[i+2]
		s := spans[int(a)%len(spans)]
		switch op % 9 {
		case 0, 1: // a child of span a (or a root, a remote child)
			names := []string{"chat m", "execute_tool calc", "record only", "dropped", "gate"}
			opts := []trace.SpanStartOption{trace.WithTimestamp(at(i)), trace.WithSpanKind(trace.SpanKind(b % 7)), trace.WithAttributes(attrs(b)...)}
			if b&0x80 != 0 {
				opts = append(opts, trace.WithNewRoot())
			}
			if b&0x40 != 0 {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: remote, Attributes: attrs(b >> 1)}, trace.Link{}))
			}
			t := tr
			if op%9 == 1 {
				t = other
			}
			ctx, span := t.Start(s.ctx, names[int(b)%len(names)], opts...)
			spans = append(spans, open{ctx, span})
		case 2:
			if s.span != nil {
				s.span.SetAttributes(attrs(b)...)
			}
		case 3:
			if s.span != nil {
				s.span.AddEvent("ev", trace.WithTimestamp(at(i)), trace.WithAttributes(attrs(b)...))
			}
		case 4:
			if s.span != nil {
				s.span.SetStatus(codes.Code(b%3), "why")
			}
		case 5:
			if s.span != nil {
				s.span.SetName("renamed")
			}
		case 6:
			if s.span != nil {
				s.span.End(trace.WithTimestamp(at(i)))
			}
		case 7:
			if s.span != nil {
				s.span.RecordError(errors.New("boom"), trace.WithTimestamp(at(i)))
			}
		case 8:
			if s.span != nil {
				s.span.AddLink(trace.Link{SpanContext: remote, Attributes: attrs(b)})
			}
		}
	}
	for i, s := range spans {
		if s.span != nil {
			s.span.End(trace.WithTimestamp(at(len(data) + i)))
		}
	}
}

// decodeExport is an Export request as text, for a failure's message.
func decodeExport(b []byte) string {
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return fmt.Sprintf("%x (%v)", b, err)
	}
	return prototext.Format(&req)
}

// compareWithSDK runs data through the SDK's provider and a spanProvider,
// each into its own batcher, and fails when their Export requests differ.
func compareWithSDK(t *testing.T, data []byte, sampler sdktrace.Sampler, limits sdktrace.SpanLimits) {
	t.Helper()
	res := resource.NewSchemaless(attribute.String("service.name", "symbi"))
	sdkBodies, ownBodies := &bodies{}, &bodies{}
	cfg := Batch{MaxBatch: 4, Delay: time.Hour}
	sdkBatcher, ownBatcher := newTestBatcher(t, sdkBodies, cfg), newTestBatcher(t, ownBodies, cfg)
	sdkTP := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sampler), sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithIDGenerator(&seqIDs{}), sdktrace.WithSpanProcessor(sdkBatcher))
	own := newSpanProvider(res, sampler, limits, ownBatcher)
	own.ids = &seqIDs{}
	script(sdkTP, data)
	script(own, data)
	ctx := context.Background()
	if err := sdkTP.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := own.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	want, got := sdkBodies.requests(), ownBodies.requests()
	if len(got) != len(want) {
		t.Fatalf("%d requests, the SDK's spans gave %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("request %d differs from the SDK's:\n got %s\nwant %s", i, decodeExport(got[i]), decodeExport(want[i]))
		}
	}
	if got, want := ownBatcher.dropped.Load(), sdkBatcher.dropped.Load(); got != want {
		t.Errorf("%d spans dropped, the SDK's %d", got, want)
	}
	sdkTP.Shutdown(ctx)
	own.Shutdown(ctx)
}

// TestSpanProviderMatchesSDK: for the same calls, a spanProvider's spans
// export byte for byte what the SDK's export: sampling (records only,
// drops, a sampler's attributes and trace state, parents local, remote and
// none), attributes over and under the limits with repeated and invalid
// keys, events and links past their limits, status, renaming, errors, and
// spans of two scopes in batches.
func TestSpanProviderMatchesSDK(t *testing.T) {
	data := []byte{
		0, 0, 0x13, 0, 2, 0x45, 2, 2, 0x3b, 3, 2, 0x21, 4, 2, 2, 1, 2, 0x52,
		2, 3, 0x4c, 8, 3, 0x11, 7, 3, 0, 4, 3, 1, 4, 3, 2, 5, 3, 0, 6, 3, 0,
		0, 1, 0x8a, 0, 1, 0x02, 0, 1, 0x03, 0, 2, 0x41, 2, 4, 0x33, 3, 4, 0x44, 3, 4, 0x55, 3, 4, 0x12,
		8, 4, 0x21, 8, 4, 0x22, 2, 4, 0x4b, 2, 4, 0x4a, 2, 4, 0x39, 6, 4, 0, 2, 4, 0x11,
	}
	for si, s := range testSamplers {
		for li, l := range testLimits {
			t.Run(s.Description()+"/"+string(rune('a'+li)), func(t *testing.T) {
				_ = si
				compareWithSDK(t, data, s, l)
			})
		}
	}
}

// FuzzSpanProviderMatchesSDK: the same, for any calls.
func FuzzSpanProviderMatchesSDK(f *testing.F) {
	f.Add([]byte{0, 0, 0x13, 2, 2, 0x3b, 3, 2, 0x21, 6, 2, 0}, byte(0))
	f.Add([]byte{1, 1, 0xc1, 0, 2, 0x45, 8, 3, 0x11, 7, 3, 0, 2, 3, 0x4c, 2, 3, 0x4b}, byte(5))
	f.Fuzz(func(t *testing.T, data []byte, config byte) {
		if len(data) > 600 {
			return
		}
		compareWithSDK(t, data, testSamplers[int(config)%len(testSamplers)], testLimits[int(config>>2)%len(testLimits)])
	})
}

// TestSpanProviderAllocs: a span of the loop — started with a kind,
// attributes set as it ends — is a few allocations, where the SDK's are a
// dozen.
func TestSpanProviderAllocs(t *testing.T) {
	res := resource.NewSchemaless(attribute.String("service.name", "symbi"))
	b := newTestBatcher(t, &bodies{}, Batch{MaxBatch: 1 << 20, MaxQueue: 1 << 20, Delay: time.Hour})
	own := newSpanProvider(res, sdktrace.ParentBased(sdktrace.AlwaysSample()), sdktrace.NewSpanLimits(), b)
	tr := own.Tracer("symbi")
	ctx, root := tr.Start(context.Background(), "invoke_agent a")
	kind := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	attrs := testAttrs[:5]
	loop := func() {
		_, s := tr.Start(ctx, "chat m", kind...)
		s.SetAttributes(attrs...)
		s.End()
	}
	for range 100 {
		loop() // the batch's chunks grow
	}
	n := testing.AllocsPerRun(200, loop)
	root.End()
	own.Shutdown(context.Background())
	if n > 4 {
		t.Errorf("%.1f allocations a span, want at most 4", n)
	}
	t.Logf("%.1f allocations a span", n)
}

// TestSpanProviderConcurrent: spans started, changed and ended from many
// goroutines at once (best-of-N candidates, parallel tool calls), children
// of one root, all reach the collector once each (run with -race).
func TestSpanProviderConcurrent(t *testing.T) {
	res := resource.NewSchemaless(attribute.String("service.name", "symbi"))
	c := &bodies{}
	b := newTestBatcher(t, c, Batch{MaxBatch: 64, Delay: time.Hour})
	own := newSpanProvider(res, sdktrace.ParentBased(sdktrace.AlwaysSample()), sdktrace.NewSpanLimits(), b)
	tr := own.Tracer("symbi")
	ctx, root := tr.Start(context.Background(), "invoke_agent a")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, s := tr.Start(ctx, "execute_tool calc")
				s.SetAttributes(attribute.Int("g", g), attribute.Int("i", i))
				s.AddEvent("ev")
				root.SetAttributes(attribute.Int("last", i)) // the root, shared
				s.End()
				s.SetName("after end") // ignored
			}
		}()
	}
	wg.Wait()
	root.End()
	if err := own.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, body := range c.requests() {
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.Name == "after end" {
						t.Error("a span renamed after its end")
					}
					n++
				}
			}
		}
	}
	if n != 8*50+1 {
		t.Errorf("%d spans exported, want %d", n, 8*50+1)
	}
}
