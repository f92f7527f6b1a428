package telemetry

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestEncodeSpansMatchesProto: the exporter's hand-written encoding is, byte
// for byte, proto.Marshal of the OTLP messages built from the same spans
// (resourceSpans below, which the exporter used before), for spans with
// every kind of attribute value, events, links, statuses, remote parents,
// several resources and scopes, and messages long enough for two- and
// three-byte lengths.
func TestEncodeSpansMatchesProto(t *testing.T) {
	spans := sampleSpans()
	want, err := exportRequest(resourceSpans(spans))
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendExportSpans(nil, spans)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the encoding differs from proto.Marshal's:\n got %x\nwant %x", got, want)
	}
	for i := range spans {
		want, _ := exportRequest(resourceSpans(spans[i : i+1]))
		if got, err := appendExportSpans(nil, spans[i:i+1]); err != nil || !bytes.Equal(got, want) {
			t.Errorf("span %d (%s): the encoding differs from proto.Marshal's:\n got %x\nwant %x", i, spans[i].Name(), got, want)
		}
	}
	if got, err := appendExportSpans(nil, nil); err != nil || len(got) != 0 {
		t.Errorf("no spans: %x, want nothing", got)
	}
}

// TestEncodeSpansAllocs: encoding a batch of spans like the engine's
// into a buffer of the right size allocates only for the grouping by
// resource and scope, not per span or per attribute (building the OTLP
// messages allocated about a dozen times an attribute). A slice value
// (AsStringSlice copies) or a trace state (String builds it) would cost
// one each.
func TestEncodeSpansAllocs(t *testing.T) {
	one := tracetest.SpanStub{
		Name:        "execute_tool read_file",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled}),
		Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{3}, TraceFlags: trace.FlagsSampled}),
		SpanKind:    trace.SpanKindInternal, StartTime: time.Unix(1764768000, 1), EndTime: time.Unix(1764768000, 2),
		Attributes: []attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "read_file"),
			attribute.String("gen_ai.tool.call.id", "call_1"), attribute.String("symbi.run.id", "01JD"), attribute.Int("n", 3), attribute.Bool("b", true)},
		Events:               []sdktrace.Event{{Name: "symbi.circuit_breaker.state", Attributes: []attribute.KeyValue{attribute.String("symbi.circuit_breaker.to", "open")}}},
		Status:               sdktrace.Status{Code: codes.Error, Description: "denied"},
		Resource:             resource.NewSchemaless(attribute.String("service.name", "symbi")),
		InstrumentationScope: instrumentation.Scope{Name: "github.com/symbi-dev/symbi/engine"},
	}.Snapshot()
	batch := make([]sdktrace.ReadOnlySpan, 512) // the SDK's default batch
	for i := range batch {
		batch[i] = one
	}
	buf, _ := appendExportSpans(nil, batch)
	allocs := testing.AllocsPerRun(20, func() { buf, _ = appendExportSpans(buf[:0], batch) })
	t.Logf("%.0f allocations", allocs)
	if allocs > 4 {
		t.Errorf("encoding 512 spans allocated %.0f times, want at most 4", allocs)
	}
}

func sampleSpans() []sdktrace.ReadOnlySpan {
	res1 := resource.NewSchemaless(attribute.String("service.name", "symbi"), attribute.String("service.version", "v1"))
	res2 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "other"))
	scope1 := instrumentation.Scope{Name: "github.com/symbi-dev/symbi/engine"}
	scope2 := instrumentation.Scope{Name: "other", Version: "1.2.3", SchemaURL: "https://example.com/s",
		Attributes: attribute.NewSet(attribute.Bool("b", true))}
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := func(sid byte, remote bool) trace.SpanContext {
		ts, _ := trace.ParseTraceState("vendor=value,other=x")
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid, 1, 2, 3, 4, 5, 6, 7},
			TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: remote})
	}
	start := time.Unix(1764768000, 123456789)
	long := strings.Repeat("x", 20000) // a three-byte length
	every := []attribute.KeyValue{
		attribute.String("s", "v"), attribute.String("empty", ""), attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Float64("pi", math.Pi), attribute.Float64("nan", math.NaN()),
		attribute.Float64("negzero", math.Copysign(0, -1)),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -1, 1 << 40}),
		attribute.Float64Slice("fs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", ""}),
		attribute.StringSlice("none", nil),
		{Key: "invalid"},
		attribute.String("long", long),
	}
	if kv := attribute.Slice("mixed", attribute.StringValue("a"), attribute.IntValue(1)); kv.Valid() {
		every = append(every, kv)
	}
	stubs := tracetest.SpanStubs{
		{
			Name: "invoke_agent a", SpanContext: sc(1, false), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start.Add(time.Second), Attributes: every,
			Status:   sdktrace.Status{Code: codes.Error, Description: "budget exhausted: tokens"},
			Resource: res1, InstrumentationScope: scope1,
		},
		{
			Name: "chat gpt", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindClient,
			StartTime: start, EndTime: start.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"})},
			Events: []sdktrace.Event{
				{Name: "symbi.policy.decision", Time: start, Attributes: []attribute.KeyValue{attribute.String("symbi.gate.decision", "deny")}, DroppedAttributeCount: 2},
				{Name: "bare"},
			},
			Links: []sdktrace.Link{
				{SpanContext: sc(9, true), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 1},
			},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
			Status:   sdktrace.Status{Code: codes.Ok},
			Resource: res1, InstrumentationScope: scope1,
		},
		{Name: "remote child", SpanContext: sc(3, false), Parent: sc(8, true), Resource: res2, InstrumentationScope: scope2},
		{Name: "", SpanContext: trace.SpanContext{}, Resource: nil, InstrumentationScope: scope2},
		{Name: "gate x", SpanContext: sc(4, false), Parent: sc(1, false), StartTime: start, EndTime: start,
			Attributes: []attribute.KeyValue{attribute.String("k", strings.Repeat("y", 200))}, Resource: res1, InstrumentationScope: scope2},
		{Name: "execute_tool t", SpanContext: sc(5, false), Parent: sc(1, false), Resource: res1, InstrumentationScope: scope1},
	}
	return stubs.Snapshots()
}

// resourceSpans groups spans by resource and scope, in OTLP's form.
func resourceSpans(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var out []*tracepb.ResourceSpans
	byRes := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rk := res.Equivalent()
		rs := byRes[rk]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: resourceOf(res), SchemaUrl: res.SchemaURL()}
			byRes[rk] = rs
			out = append(out, rs)
		}
		sk := scopeKey{rk, scopeIdentity(s.InstrumentationScope())}
		ss := byScope[sk]
		if ss == nil {
			sc := s.InstrumentationScope()
			ss = &tracepb.ScopeSpans{Scope: scopeOf(sc), SchemaUrl: sc.SchemaURL}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanOf(s))
	}
	return out
}

func spanOf(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano:      uint64(s.StartTime().UnixNano()),
		EndTimeUnixNano:        uint64(s.EndTime().UnixNano()),
		Attributes:             keyValues(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
	}
	if parent := s.Parent(); parent.IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
		if parent.IsRemote() {
			flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	p.Flags = flags
	switch st := s.Status(); st.Code {
	case codes.Error:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	case codes.Ok:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano: uint64(ev.Time.UnixNano()), Name: ev.Name,
			Attributes: keyValues(ev.Attributes), DroppedAttributesCount: uint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: keyValues(l.Attributes), DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags: uint32(l.SpanContext.TraceFlags()),
		})
	}
	return p
}
