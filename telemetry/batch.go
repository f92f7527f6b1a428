package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP span exporter is fed by spanBatcher, not the SDK's batch span
// processor. Both export the same batches: up to MaxBatch spans, when a
// batch is full or Delay after the last export, off the loop's path, with
// a bounded queue that drops rather than blocks. They differ in what a
// span waiting for its batch costs. The SDK's processor sends each ended
// span over a channel to its goroutine (a wake-up per span) and keeps the
// span's snapshot, pointers and all, until the batch is exported: in a
// 100-round run that is a few hundred spans the garbage collector scans in
// every cycle, and that scanning was most of what tracing cost the loop
// (docs/benchmarks.md). spanBatcher encodes a span into its batch's OTLP
// bytes as it ends (the encoding the exporter would do later anyway) and
// keeps nothing else: a batch is a byte slice the collector does not scan,
// and its goroutine wakes once a batch.

// Batch is the batching of spans: the specification's OTEL_BSP_* settings.
type Batch struct {
	Delay    time.Duration // OTEL_BSP_SCHEDULE_DELAY: the longest a span waits for its batch
	Timeout  time.Duration // OTEL_BSP_EXPORT_TIMEOUT: one batch's export
	MaxQueue int           // OTEL_BSP_MAX_QUEUE_SIZE: spans waiting, past which spans are dropped
	MaxBatch int           // OTEL_BSP_MAX_EXPORT_BATCH_SIZE: spans in one export
}

// DefaultBatch is the specification's (and the SDK's) batching.
func DefaultBatch() Batch {
	return Batch{Delay: 5 * time.Second, Timeout: 30 * time.Second, MaxQueue: 2048, MaxBatch: 512}
}

// spanBatcher is a span processor that batches sampled spans as OTLP
// bytes for one spanExporter.
type spanBatcher struct {
	exp *spanExporter
	cfg Batch

	mu      sync.Mutex
	cur     spanBatch   // the batch being filled
	ready   []spanBatch // full batches, for the goroutine
	queued  int         // spans in cur and ready
	scratch []byte      // one span's encoding, before it is copied to its group
	stopped bool

	dropped atomic.Int64 // spans dropped: the queue was full, or a string was not UTF-8

	// exporting serialises exports, the goroutine's and a flush's: a
	// token, so that a flush can stop waiting for it when its context ends.
	exporting chan struct{}

	wake     chan struct{} // a batch is ready (capacity 1: wakes coalesce)
	stop     chan struct{}
	done     chan struct{}
	shutdown sync.Once
}

// spanBatch is the spans of one export, encoded, by resource and scope.
type spanBatch struct {
	groups []spanGroup // in the order of each group's first span
	n      int
}

// spanGroup is the encoded spans (ScopeSpans.spans fields) of one
// resource and scope.
type spanGroup struct {
	key   attribute.Distinct
	res   *resource.Resource
	id    instrumentation.Scope // without its attributes: see scopeIdentity
	scope instrumentation.Scope // its first span's, attributes and all
	spans [][]byte              // chunks of encoded spans
	size  int                   // their bytes
}

// chunkSize is the size of a group's chunks. Spans are kept in chunks,
// each filled before the next is made, not in one slice that grows by
// doubling: a batch then holds about the bytes of its spans, not up to
// twice as many, and nothing is copied as it grows. In a process whose
// heap is a few megabytes, what a batch holds between exports is memory
// the garbage collector's pacing counts against every cycle.
const chunkSize = 16 << 10

// add appends one span's encoding to the group.
func (g *spanGroup) add(span []byte) {
	if n := len(g.spans); n == 0 || cap(g.spans[n-1])-len(g.spans[n-1]) < len(span) {
		g.spans = append(g.spans, make([]byte, 0, max(chunkSize, len(span))))
	}
	last := &g.spans[len(g.spans)-1]
	*last = append(*last, span...)
	g.size += len(span)
}

// orDefault is b with DefaultBatch's value for each setting it lacks, and
// a batch no larger than the queue, as the SDK's processor has it.
func (b Batch) orDefault() Batch {
	d := DefaultBatch()
	if b.Delay <= 0 {
		b.Delay = d.Delay
	}
	if b.Timeout <= 0 {
		b.Timeout = d.Timeout
	}
	if b.MaxQueue <= 0 {
		b.MaxQueue = d.MaxQueue
	}
	if b.MaxBatch <= 0 {
		b.MaxBatch = d.MaxBatch
	}
	b.MaxBatch = min(b.MaxBatch, b.MaxQueue)
	return b
}

func newSpanBatcher(exp *spanExporter, cfg Batch) *spanBatcher {
	cfg = cfg.orDefault()
	b := &spanBatcher{exp: exp, cfg: cfg, exporting: make(chan struct{}, 1), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd encodes a sampled span into the batch being filled.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		b.add(s)
	}
}

// add encodes an ended span into the batch being filled.
func (b *spanBatcher) add(s spanView) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	if b.queued >= b.cfg.MaxQueue {
		b.dropped.Add(1)
		return
	}
	e := encoder{b: b.scratch[:0]}
	e.span(s)
	b.scratch = e.b
	if e.invalid {
		// proto3 strings are UTF-8: a collector would refuse the whole
		// request, so the span alone is left out.
		b.dropped.Add(1)
		return
	}
	b.cur.group(s).add(e.b)
	b.cur.n++
	b.queued++
	if b.cur.n >= b.cfg.MaxBatch {
		b.cut()
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// group is the group of s's resource and scope, added when new.
func (sb *spanBatch) group(s spanView) *spanGroup {
	res := s.Resource()
	key := res.Equivalent()
	scope := s.InstrumentationScope()
	id := scopeIdentity(scope)
	for i := range sb.groups {
		if g := &sb.groups[i]; g.key == key && g.id == id {
			return g
		}
	}
	sb.groups = append(sb.groups, spanGroup{key: key, res: res, id: id, scope: scope})
	return &sb.groups[len(sb.groups)-1]
}

// cut moves the batch being filled, if it has spans, to the ready ones.
// b.mu is held.
func (b *spanBatcher) cut() {
	if b.cur.n == 0 {
		return
	}
	b.ready = append(b.ready, b.cur)
	b.cur = spanBatch{}
}

func (b *spanBatcher) loop() {
	defer close(b.done)
	t := time.NewTimer(b.cfg.Delay)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.wake:
		case <-t.C:
			b.mu.Lock()
			b.cut()
			b.mu.Unlock()
		}
		b.exportReady(context.Background())
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(b.cfg.Delay)
	}
}

// exportReady exports the ready batches, one request each, in order.
// Failures go to the OpenTelemetry error handler (Telemetry counts them).
func (b *spanBatcher) exportReady(ctx context.Context) error {
	select {
	case b.exporting <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.exporting }()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.mu.Lock()
		if len(b.ready) == 0 {
			b.mu.Unlock()
			return nil
		}
		batch := b.ready[0]
		b.ready[0] = spanBatch{}
		b.ready = b.ready[1:]
		b.queued -= batch.n
		b.mu.Unlock()
		ectx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
		err := b.exp.exportEncoded(ectx, batch.request(), batch.n)
		cancel()
		if err != nil {
			otel.Handle(err)
		}
	}
}

// request is the batch's Export request: by resource, then by scope, each
// in the order its first span came, the bytes appendExportSpans gives for
// the same spans (TestSpanBatcherMatchesExport).
func (sb *spanBatch) request() []byte {
	size := 0
	for _, g := range sb.groups {
		size += g.size + 512
	}
	e := &encoder{b: make([]byte, 0, size)}
	done := make([]bool, len(sb.groups))
	for i, first := range sb.groups {
		if done[i] {
			continue
		}
		rs := e.begin(fieldRequestResourceSpans)
		e.resource(fieldResourceSpansResource, first.res)
		for j := i; j < len(sb.groups); j++ {
			g := &sb.groups[j]
			if done[j] || g.key != first.key {
				continue
			}
			done[j] = true
			ss := e.begin(fieldResourceSpansScopeSpans)
			e.scope(fieldScopeSpansScope, g.scope)
			for _, c := range g.spans {
				e.b = append(e.b, c...)
			}
			e.string(fieldScopeSpansSchemaURL, g.scope.SchemaURL)
			e.end(ss)
		}
		if first.res != nil {
			e.string(fieldResourceSpansSchemaURL, first.res.SchemaURL())
		}
		e.end(rs)
	}
	return e.b
}

// ForceFlush exports every span ended so far, within ctx.
func (b *spanBatcher) ForceFlush(ctx context.Context) error {
	b.mu.Lock()
	b.cut()
	b.mu.Unlock()
	return b.exportReady(ctx)
}

// Shutdown stops the goroutine, exports what is left within ctx, and
// shuts the exporter down; spans that end later are dropped.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	var err error
	b.shutdown.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.cut()
		b.mu.Unlock()
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
		}
		err = b.exportReady(ctx)
		if serr := b.exp.Shutdown(ctx); err == nil {
			err = serr
		}
	})
	return err
}
