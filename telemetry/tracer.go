package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// When the OTLP exporter is the only trace exporter, spans are made by
// spanProvider, not the SDK's TracerProvider. The SDK's span allocates
// about a dozen objects that live until it ends or longer (the span, its
// snapshot handed to the processors, a map to de-duplicate its attributes,
// copies of its events and links), and in a process whose live heap is a
// megabyte or two that garbage was most of what tracing cost the loop
// (docs/benchmarks.md). A spanProvider's span is one object and its
// attributes' slice; as it ends it is encoded straight into its batch's
// OTLP bytes (spanBatcher.add) and is garbage at once.
//
// It is the SDK's span in everything a collector sees: the sampler is the
// SDK's (ShouldSample with the same parameters), the span limits are the
// SDK's (sdktrace.NewSpanLimits, the OTEL_SPAN_*_LIMIT variables) applied
// as the SDK applies them (attributes de-duplicated, the last value kept
// at the first key's place; events and links past their limit evicting
// the oldest), and the Export request is byte for byte the one the SDK's
// span gives for the same calls (TestSpanProviderMatchesSDK,
// FuzzSpanProviderMatchesSDK). What it leaves to the SDK: a configuration
// that limits attribute values' length (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
// whose truncation rules are the SDK's internal code) makes Start use the
// SDK's provider, and the SDK's normalisation of nested values
// (attribute.SLICE and MAP, which symbi's engine never sets) is not done:
// they are encoded as given.

// spanProvider is a trace.TracerProvider whose sampled spans go to one
// spanBatcher.
type spanProvider struct {
	embedded.TracerProvider

	res     *resource.Resource
	sampler sdktrace.Sampler
	limits  sdktrace.SpanLimits
	batcher *spanBatcher
	// ids makes the IDs (randomIDs; the tests' are deterministic).
	ids sdktrace.IDGenerator

	mu      sync.Mutex
	tracers map[instrumentation.Scope]*spanTracer // by scopeIdentity
}

// newSpanProvider is a provider for batcher's exporter, or nil when the
// limits ask for what only the SDK's span does.
func newSpanProvider(res *resource.Resource, sampler sdktrace.Sampler, limits sdktrace.SpanLimits, batcher *spanBatcher) *spanProvider {
	if limits.AttributeValueLengthLimit >= 0 {
		return nil
	}
	return &spanProvider{res: res, sampler: sampler, limits: limits, batcher: batcher, ids: randomIDs{}, tracers: map[instrumentation.Scope]*spanTracer{}}
}

// randomIDs makes random IDs, none of them zero, from math/rand/v2's
// generator (ChaCha8, one state per thread: no lock, unlike the SDK's
// default generator).
type randomIDs struct{}

func (randomIDs) NewIDs(ctx context.Context) (tid trace.TraceID, sid trace.SpanID) {
	for !tid.IsValid() {
		putUint64(tid[:8], rand.Uint64())
		putUint64(tid[8:], rand.Uint64())
	}
	return tid, randomIDs{}.NewSpanID(ctx, tid)
}

func (randomIDs) NewSpanID(context.Context, trace.TraceID) (sid trace.SpanID) {
	for !sid.IsValid() {
		putUint64(sid[:], rand.Uint64())
	}
	return sid
}

func putUint64(b []byte, v uint64) {
	_ = b[7]
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// Tracer is the tracer of one instrumentation scope, made once.
func (p *spanProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	c := trace.NewTracerConfig(opts...)
	scope := instrumentation.Scope{Name: name, Version: c.InstrumentationVersion(), SchemaURL: c.SchemaURL(), Attributes: c.InstrumentationAttributes()}
	id := scopeIdentity(scope)
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tracers[id]
	if !ok {
		t = &spanTracer{p: p, scope: scope}
		p.tracers[id] = t
	}
	return t
}

// Shutdown exports what is left and stops the batcher, within ctx.
func (p *spanProvider) Shutdown(ctx context.Context) error { return p.batcher.Shutdown(ctx) }

// ForceFlush exports every span ended so far, within ctx.
func (p *spanProvider) ForceFlush(ctx context.Context) error { return p.batcher.ForceFlush(ctx) }

type spanTracer struct {
	embedded.Tracer

	p     *spanProvider
	scope instrumentation.Scope
}

// Start starts a span as the SDK's tracer does: a child of ctx's span
// context (unless WithNewRoot), sampled by the sampler.
func (t *spanTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	config := trace.NewSpanStartConfig(opts...)
	if ctx == nil {
		ctx = context.Background()
	}
	var psc trace.SpanContext
	sctx := ctx
	if config.NewRoot() {
		sctx = trace.ContextWithSpanContext(ctx, psc)
	} else {
		psc = trace.SpanContextFromContext(ctx)
	}
	var tid trace.TraceID
	var sid trace.SpanID
	if !psc.TraceID().IsValid() {
		tid, sid = t.p.ids.NewIDs(sctx)
	} else {
		tid = psc.TraceID()
		sid = t.p.ids.NewSpanID(sctx, tid)
	}
	sr := t.p.sampler.ShouldSample(sdktrace.SamplingParameters{
		ParentContext: sctx,
		TraceID:       tid,
		Name:          name,
		Kind:          config.SpanKind(),
		Attributes:    config.Attributes(),
		Links:         config.Links(),
	})
	scc := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceState: sr.Tracestate}
	if sr.Decision == sdktrace.RecordAndSample {
		scc.TraceFlags = psc.TraceFlags() | trace.FlagsSampled
	} else {
		scc.TraceFlags = psc.TraceFlags() &^ trace.FlagsSampled
	}
	sc := trace.NewSpanContext(scc)
	if sr.Decision == sdktrace.Drop {
		return trace.ContextWithSpan(ctx, unrecorded{sc: sc, p: t.p}), unrecorded{sc: sc, p: t.p}
	}
	start := config.Timestamp()
	if start.IsZero() {
		start = time.Now()
	}
	s := &span{t: t, parent: psc, sc: sc, kind: trace.ValidateSpanKind(config.SpanKind()), name: name, start: start}
	for _, l := range config.Links() {
		s.AddLink(l)
	}
	s.SetAttributes(sr.Attributes...)
	s.SetAttributes(config.Attributes()...)
	return trace.ContextWithSpan(ctx, s), s
}

// span is a recording span of a spanProvider. It implements spanView for
// the encoder, which reads it once it has ended, under the batcher's lock.
type span struct {
	embedded.Span

	t      *spanTracer
	parent trace.SpanContext
	sc     trace.SpanContext
	kind   trace.SpanKind

	mu         sync.Mutex
	name       string
	start, end time.Time
	status     sdktrace.Status
	attrs      []attribute.KeyValue
	dirty      bool // attrs may hold a key twice
	dropped    int  // attributes
	events     []sdktrace.Event
	evDropped  int
	links      []sdktrace.Link
	lnkDropped int
}

func (s *span) SpanContext() trace.SpanContext { return s.sc }

func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end.IsZero()
}

func (s *span) TracerProvider() trace.TracerProvider { return s.t.p }

func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end.IsZero() || s.status.Code > code {
		return
	}
	st := sdktrace.Status{Code: code}
	if code == codes.Error {
		st.Description = description
	}
	s.status = st
}

func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end.IsZero() {
		s.name = name
	}
}

// SetAttributes adds attrs as the SDK's span does: invalid ones are
// dropped; under the count limit they are appended (duplicates are
// resolved as the span ends); past it, a key already set takes the new
// value in place and a new key is dropped.
func (s *span) SetAttributes(attrs ...attribute.KeyValue) {
	if len(attrs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end.IsZero() {
		return
	}
	limit := s.t.p.limits.AttributeCountLimit
	if limit == 0 {
		s.dropped += len(attrs)
		return
	}
	if limit > 0 && len(s.attrs)+len(attrs) > limit {
		s.dedupe()
		for _, a := range attrs {
			if !a.Valid() {
				s.dropped++
				continue
			}
			if i := s.index(a.Key); i >= 0 {
				s.attrs[i] = a
				continue
			}
			if len(s.attrs) >= limit {
				s.dropped++
				continue
			}
			s.attrs = append(s.attrs, a)
		}
		return
	}
	if s.attrs == nil {
		s.attrs = make([]attribute.KeyValue, 0, len(attrs))
	}
	for _, a := range attrs {
		if !a.Valid() {
			s.dropped++
			continue
		}
		s.attrs = append(s.attrs, a)
		s.dirty = true
	}
}

// index is where key is in s.attrs, which hold no key twice, or -1.
func (s *span) index(key attribute.Key) int {
	for i := range s.attrs {
		if s.attrs[i].Key == key {
			return i
		}
	}
	return -1
}

// dedupe leaves one attribute a key, at its first place with its last
// value, as the SDK's dedupeAttrs does. A span has a few dozen attributes
// at most: a search of those kept is cheaper than the SDK's map.
func (s *span) dedupe() {
	if !s.dirty {
		return
	}
	s.dirty = false
	unique := s.attrs[:0]
	for _, a := range s.attrs {
		found := false
		for i := range unique {
			if unique[i].Key == a.Key {
				unique[i] = a
				found = true
				break
			}
		}
		if !found {
			unique = append(unique, a)
		}
	}
	clear(s.attrs[len(unique):])
	s.attrs = unique
}

func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end.IsZero() {
		s.addEvent(name, opts...)
	}
}

func (s *span) addEvent(name string, opts ...trace.EventOption) {
	c := trace.NewEventConfig(opts...)
	e := sdktrace.Event{Name: name, Time: c.Timestamp()}
	e.Attributes, e.DroppedAttributeCount = capAttrs(c.Attributes(), s.t.p.limits.AttributePerEventCountLimit)
	s.events = evict(s.events, e, s.t.p.limits.EventCountLimit, &s.evDropped)
}

// capAttrs is attrs cut at an event's or a link's attribute limit (none
// when negative), and how many were cut.
func capAttrs(attrs []attribute.KeyValue, limit int) ([]attribute.KeyValue, int) {
	switch {
	case limit == 0:
		return nil, len(attrs)
	case limit > 0 && len(attrs) > limit:
		return attrs[:limit], len(attrs) - limit
	}
	return attrs, 0
}

// evict appends v to q, or counts it dropped when the limit is 0; at the
// limit the oldest is dropped first (the SDK's evictedQueue).
func evict[T any](q []T, v T, limit int, dropped *int) []T {
	if limit == 0 {
		*dropped++
		return q
	}
	if limit > 0 && len(q) == limit {
		copy(q, q[1:])
		q = q[:limit-1]
		*dropped++
	}
	return append(q, v)
}

// RecordError adds the exception event the SDK's span adds.
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil || !s.IsRecording() {
		return
	}
	opts = append(opts, trace.WithAttributes(
		attribute.String("exception.type", typeName(err)),
		attribute.String("exception.message", err.Error()),
	))
	if c := trace.NewEventConfig(opts...); c.StackTrace() {
		stack := make([]byte, 2048)
		stack = stack[:runtime.Stack(stack, false)]
		opts = append(opts, trace.WithAttributes(attribute.String("exception.stacktrace", string(stack))))
	}
	s.AddEvent("exception", opts...)
}

func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return fmt.Sprintf("%s.%s", t.PkgPath(), t.Name())
}

func (s *span) AddLink(link trace.Link) {
	if !link.SpanContext.IsValid() && len(link.Attributes) == 0 && link.SpanContext.TraceState().Len() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.end.IsZero() {
		return
	}
	l := sdktrace.Link{SpanContext: link.SpanContext}
	l.Attributes, l.DroppedAttributeCount = capAttrs(link.Attributes, s.t.p.limits.AttributePerLinkCountLimit)
	s.links = evict(s.links, l, s.t.p.limits.LinkCountLimit, &s.lnkDropped)
}

// End ends the span and, when it is sampled, encodes it into its batch;
// a second End does nothing.
func (s *span) End(opts ...trace.SpanEndOption) {
	end := s.start.Add(time.Since(s.start)) // the monotonic clock, as the SDK's
	s.mu.Lock()
	if !s.end.IsZero() {
		s.mu.Unlock()
		return
	}
	if c := trace.NewSpanEndConfig(opts...); !c.Timestamp().IsZero() {
		end = c.Timestamp()
	}
	s.end = end
	s.dedupe()
	s.mu.Unlock()
	if s.sc.IsSampled() {
		s.t.p.batcher.add(s)
	}
}

// The spanView of an ended span: read by the encoder only, after End,
// when nothing changes it any more.

func (s *span) Parent() trace.SpanContext        { return s.parent }
func (s *span) Name() string                     { return s.name }
func (s *span) SpanKind() trace.SpanKind         { return s.kind }
func (s *span) StartTime() time.Time             { return s.start }
func (s *span) EndTime() time.Time               { return s.end }
func (s *span) Attributes() []attribute.KeyValue { return s.attrs }
func (s *span) DroppedAttributes() int           { return s.dropped }
func (s *span) Events() []sdktrace.Event         { return s.events }
func (s *span) DroppedEvents() int {
	if len(s.events) == 0 {
		return 0 // as the SDK's snapshot has it: no events, no count
	}
	return s.evDropped
}
func (s *span) Links() []sdktrace.Link { return s.links }
func (s *span) DroppedLinks() int {
	if len(s.links) == 0 {
		return 0 // as the SDK's snapshot has it
	}
	return s.lnkDropped
}
func (s *span) Status() sdktrace.Status                     { return s.status }
func (s *span) Resource() *resource.Resource                { return s.t.p.res }
func (s *span) InstrumentationScope() instrumentation.Scope { return s.t.scope }

// unrecorded is a span the sampler dropped: it carries its span context
// to its children and records nothing.
type unrecorded struct {
	embedded.Span

	sc trace.SpanContext
	p  *spanProvider
}

func (u unrecorded) SpanContext() trace.SpanContext        { return u.sc }
func (unrecorded) IsRecording() bool                       { return false }
func (unrecorded) SetStatus(codes.Code, string)            {}
func (unrecorded) SetAttributes(...attribute.KeyValue)     {}
func (unrecorded) End(...trace.SpanEndOption)              {}
func (unrecorded) RecordError(error, ...trace.EventOption) {}
func (unrecorded) AddEvent(string, ...trace.EventOption)   {}
func (unrecorded) AddLink(trace.Link)                      {}
func (unrecorded) SetName(string)                          {}
func (u unrecorded) TracerProvider() trace.TracerProvider  { return u.p }
