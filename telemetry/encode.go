package telemetry

import (
	"errors"
	"math"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The span exporter writes the collector's Export request straight from
// the SDK's spans, field by field, into one buffer: the bytes proto.Marshal
// gives for the OTLP message types (go.opentelemetry.io/proto/otlp) built
// from the same spans, which TestEncodeSpansMatchesProto holds it to, but
// without building those messages (a dozen small allocations an attribute)
// or walking them by reflection. A run of a hundred iterations exports
// about 300 spans; building the messages was most of the exporter's
// allocations and CPU (docs/benchmarks.md). The metrics, exported once a
// minute, are still encoded from the message types (transform.go).

// Field numbers of opentelemetry/proto/{collector,trace,resource,common}/v1.
const (
	fieldRequestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fieldResourceSpansResource   = 1
	fieldResourceSpansScopeSpans = 2
	fieldResourceSpansSchemaURL  = 3

	fieldResourceAttributes = 1

	fieldScopeSpansScope     = 1
	fieldScopeSpansSpans     = 2
	fieldScopeSpansSchemaURL = 3

	fieldScopeName       = 1
	fieldScopeVersion    = 2
	fieldScopeAttributes = 3

	fieldSpanTraceID           = 1
	fieldSpanSpanID            = 2
	fieldSpanTraceState        = 3
	fieldSpanParentSpanID      = 4
	fieldSpanName              = 5
	fieldSpanKind              = 6
	fieldSpanStartTime         = 7
	fieldSpanEndTime           = 8
	fieldSpanAttributes        = 9
	fieldSpanDroppedAttributes = 10
	fieldSpanEvents            = 11
	fieldSpanDroppedEvents     = 12
	fieldSpanLinks             = 13
	fieldSpanDroppedLinks      = 14
	fieldSpanStatus            = 15
	fieldSpanFlags             = 16

	fieldEventTime              = 1
	fieldEventName              = 2
	fieldEventAttributes        = 3
	fieldEventDroppedAttributes = 4

	fieldLinkTraceID           = 1
	fieldLinkSpanID            = 2
	fieldLinkTraceState        = 3
	fieldLinkAttributes        = 4
	fieldLinkDroppedAttributes = 5
	fieldLinkFlags             = 6

	fieldStatusMessage = 2
	fieldStatusCode    = 3

	fieldKeyValueKey   = 1
	fieldKeyValueValue = 2

	fieldAnyString = 1
	fieldAnyBool   = 2
	fieldAnyInt    = 3
	fieldAnyDouble = 4
	fieldAnyArray  = 5
	fieldAnyKvlist = 6
	fieldAnyBytes  = 7

	fieldValues = 1 // ArrayValue.values, KeyValueList.values
)

// The OTLP span flags and status codes (trace.proto's SpanFlags and
// Status.StatusCode).
const (
	flagContextHasIsRemote = 0x100
	flagContextIsRemote    = 0x200
	statusCodeOK           = 1
	statusCodeError        = 2
)

// encoder appends an Export request to b. Its first string that is not
// valid UTF-8 is an error, as proto.Marshal makes it (proto3 strings are
// UTF-8; a collector would refuse the request).
type encoder struct {
	b       []byte
	invalid bool
}

// appendExportSpans appends the Export request of spans: grouped by
// resource, then by scope, each group in the order its first span came,
// as resourceSpans groups them.
func appendExportSpans(b []byte, spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	type scopeGroup struct {
		scope instrumentation.Scope // without its attributes: see scopeIdentity
		first sdktrace.ReadOnlySpan
	}
	type resourceGroup struct {
		key    attribute.Distinct
		res    *resource.Resource
		scopes []scopeGroup
	}
	var groups []resourceGroup
	for _, s := range spans {
		res := s.Resource()
		rk := res.Equivalent()
		g := -1
		for j := range groups {
			if groups[j].key == rk {
				g = j
				break
			}
		}
		if g < 0 {
			groups = append(groups, resourceGroup{key: rk, res: res})
			g = len(groups) - 1
		}
		sc := scopeIdentity(s.InstrumentationScope())
		k := -1
		for j := range groups[g].scopes {
			if groups[g].scopes[j].scope == sc {
				k = j
				break
			}
		}
		if k < 0 {
			groups[g].scopes = append(groups[g].scopes, scopeGroup{scope: sc, first: s})
		}
	}
	e := &encoder{b: b}
	for _, g := range groups {
		rs := e.begin(fieldRequestResourceSpans)
		e.resource(fieldResourceSpansResource, g.res)
		for _, sg := range g.scopes {
			ss := e.begin(fieldResourceSpansScopeSpans)
			scope := sg.first.InstrumentationScope()
			e.scope(fieldScopeSpansScope, scope)
			// One pass over the batch a group: there are one or two.
			for _, s := range spans {
				if s.Resource().Equivalent() == g.key && scopeIdentity(s.InstrumentationScope()) == sg.scope {
					e.span(s)
				}
			}
			e.string(fieldScopeSpansSchemaURL, scope.SchemaURL)
			e.end(ss)
		}
		if g.res != nil {
			e.string(fieldResourceSpansSchemaURL, g.res.SchemaURL())
		}
		e.end(rs)
	}
	if e.invalid {
		return nil, errors.New("a span's string field contains invalid UTF-8")
	}
	return e.b, nil
}

// spanView is what the encoder reads of an ended span: an
// sdktrace.ReadOnlySpan, or a spanProvider's span.
type spanView interface {
	SpanContext() trace.SpanContext
	Parent() trace.SpanContext
	Name() string
	SpanKind() trace.SpanKind
	StartTime() time.Time
	EndTime() time.Time
	Attributes() []attribute.KeyValue
	DroppedAttributes() int
	Events() []sdktrace.Event
	DroppedEvents() int
	Links() []sdktrace.Link
	DroppedLinks() int
	Status() sdktrace.Status
	Resource() *resource.Resource
	InstrumentationScope() instrumentation.Scope
}

// span appends one span as ScopeSpans.spans: the fields spanOf sets, in
// field-number order, each left out when proto3 leaves it out (empty,
// zero).
func (e *encoder) span(s spanView) {
	m := e.begin(fieldScopeSpansSpans)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(fieldSpanTraceID, tid[:])
	e.bytes(fieldSpanSpanID, sid[:])
	if ts := sc.TraceState(); ts.Len() > 0 {
		e.string(fieldSpanTraceState, ts.String())
	}
	flags := uint32(sc.TraceFlags()) | flagContextHasIsRemote
	if parent := s.Parent(); parent.IsValid() {
		psid := parent.SpanID()
		e.bytes(fieldSpanParentSpanID, psid[:])
		if parent.IsRemote() {
			flags |= flagContextIsRemote
		}
	}
	e.string(fieldSpanName, s.Name())
	e.varint(fieldSpanKind, uint64(s.SpanKind()))
	e.fixed64(fieldSpanStartTime, uint64(s.StartTime().UnixNano()))
	e.fixed64(fieldSpanEndTime, uint64(s.EndTime().UnixNano()))
	e.keyValues(fieldSpanAttributes, s.Attributes())
	e.varint(fieldSpanDroppedAttributes, uint64(uint32(s.DroppedAttributes())))
	for _, ev := range s.Events() {
		m := e.begin(fieldSpanEvents)
		e.fixed64(fieldEventTime, uint64(ev.Time.UnixNano()))
		e.string(fieldEventName, ev.Name)
		e.keyValues(fieldEventAttributes, ev.Attributes)
		e.varint(fieldEventDroppedAttributes, uint64(uint32(ev.DroppedAttributeCount)))
		e.end(m)
	}
	e.varint(fieldSpanDroppedEvents, uint64(uint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		m := e.begin(fieldSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(fieldLinkTraceID, ltid[:])
		e.bytes(fieldLinkSpanID, lsid[:])
		if ts := l.SpanContext.TraceState(); ts.Len() > 0 {
			e.string(fieldLinkTraceState, ts.String())
		}
		e.keyValues(fieldLinkAttributes, l.Attributes)
		e.varint(fieldLinkDroppedAttributes, uint64(uint32(l.DroppedAttributeCount)))
		e.fixed32(fieldLinkFlags, uint32(l.SpanContext.TraceFlags()))
		e.end(m)
	}
	e.varint(fieldSpanDroppedLinks, uint64(uint32(s.DroppedLinks())))
	switch st := s.Status(); st.Code {
	case codes.Error:
		m := e.begin(fieldSpanStatus)
		e.string(fieldStatusMessage, st.Description)
		e.varint(fieldStatusCode, statusCodeError)
		e.end(m)
	case codes.Ok:
		m := e.begin(fieldSpanStatus)
		e.varint(fieldStatusCode, statusCodeOK)
		e.end(m)
	}
	e.fixed32(fieldSpanFlags, flags)
	e.end(m)
}

// keyValues appends kvs as the repeated KeyValue field num.
func (e *encoder) keyValues(num protowire.Number, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		m := e.begin(num)
		e.string(fieldKeyValueKey, string(kv.Key))
		v := e.begin(fieldKeyValueValue)
		e.anyValue(kv.Value)
		e.end(v)
		e.end(m)
	}
}

// anyValue appends the fields of v's AnyValue. Its value is a oneof:
// written even when it is the zero value, as proto3 writes a set oneof.
func (e *encoder) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		e.b = protowire.AppendTag(e.b, fieldAnyBool, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		e.b = protowire.AppendTag(e.b, fieldAnyInt, protowire.VarintType)
		e.b = protowire.AppendVarint(e.b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.b = protowire.AppendTag(e.b, fieldAnyDouble, protowire.Fixed64Type)
		e.b = protowire.AppendFixed64(e.b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		s := v.AsString()
		e.checkUTF8(s)
		e.b = protowire.AppendTag(e.b, fieldAnyString, protowire.BytesType)
		e.b = protowire.AppendString(e.b, s)
	case attribute.BYTESLICE:
		e.b = protowire.AppendTag(e.b, fieldAnyBytes, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		a := e.begin(fieldAnyArray)
		for _, x := range v.AsBoolSlice() {
			e.arrayItem(attribute.BoolValue(x))
		}
		e.end(a)
	case attribute.INT64SLICE:
		a := e.begin(fieldAnyArray)
		for _, x := range v.AsInt64Slice() {
			e.arrayItem(attribute.Int64Value(x))
		}
		e.end(a)
	case attribute.FLOAT64SLICE:
		a := e.begin(fieldAnyArray)
		for _, x := range v.AsFloat64Slice() {
			e.arrayItem(attribute.Float64Value(x))
		}
		e.end(a)
	case attribute.STRINGSLICE:
		a := e.begin(fieldAnyArray)
		for _, x := range v.AsStringSlice() {
			e.arrayItem(attribute.StringValue(x))
		}
		e.end(a)
	case attribute.SLICE:
		a := e.begin(fieldAnyArray)
		for _, x := range v.AsSlice() {
			e.arrayItem(x)
		}
		e.end(a)
	case attribute.MAP:
		m := e.begin(fieldAnyKvlist)
		e.keyValues(fieldValues, v.AsMap())
		e.end(m)
	}
	// Any other is an invalid value: an empty AnyValue.
}

func (e *encoder) arrayItem(v attribute.Value) {
	m := e.begin(fieldValues)
	e.anyValue(v)
	e.end(m)
}

// resource appends res as the Resource message field num (empty when res
// is nil), as ResourceSpans and ResourceMetrics hold it.
func (e *encoder) resource(num protowire.Number, res *resource.Resource) {
	r := e.begin(num)
	if res != nil {
		e.keyValues(fieldResourceAttributes, res.Attributes())
	}
	e.end(r)
}

// scope appends s as the InstrumentationScope message field num, as
// ScopeSpans and ScopeMetrics hold it.
func (e *encoder) scope(num protowire.Number, s instrumentation.Scope) {
	m := e.begin(num)
	e.string(fieldScopeName, s.Name)
	e.string(fieldScopeVersion, s.Version)
	e.keyValues(fieldScopeAttributes, s.Attributes.ToSlice())
	e.end(m)
}

// begin appends the tag of the message field num and one byte for its
// length, and returns where the message's bytes start; end writes the
// length there once the message is appended, moving the bytes along when
// the length needs more than one byte.
func (e *encoder) begin(num protowire.Number) int {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = append(e.b, 0)
	return len(e.b)
}

func (e *encoder) end(start int) {
	n := len(e.b) - start
	if n < 0x80 {
		e.b[start-1] = byte(n)
		return
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	var pad [9]byte
	e.b = append(e.b, pad[:extra]...)
	copy(e.b[start+extra:], e.b[start:start+n])
	protowire.AppendVarint(e.b[start-1:start-1], uint64(n))
}

// The scalar fields, left out when zero or empty, as proto3 leaves them.

func (e *encoder) string(num protowire.Number, s string) {
	if s == "" {
		return
	}
	e.checkUTF8(s)
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

func (e *encoder) checkUTF8(s string) {
	if !e.invalid && !utf8.ValidString(s) {
		e.invalid = true
	}
}

func (e *encoder) bytes(num protowire.Number, v []byte) {
	if len(v) == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, v)
}

func (e *encoder) varint(num protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

func (e *encoder) fixed64(num protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, v)
}

func (e *encoder) fixed32(num protowire.Number, v uint32) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.Fixed32Type)
	e.b = protowire.AppendFixed32(e.b, v)
}
