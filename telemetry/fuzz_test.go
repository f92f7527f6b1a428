package telemetry

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
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

	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzOTLPResponse: whatever a collector answers (an Export response's
// bytes, over http/protobuf or behind gRPC's prefix) is read without a
// panic, and a partial success written by the specification's encoding is
// read back: nothing rejected is no error, anything rejected an error
// that says how much.
func FuzzOTLPResponse(f *testing.F) {
	f.Add([]byte{}, uint64(0), "")
	f.Add([]byte{0x0a, 0x02, 0x08, 0x03}, uint64(3), "too big")
	f.Add([]byte{0x0a, 0xff}, uint64(1), "")
	f.Fuzz(func(t *testing.T, body []byte, rejected uint64, why string) {
		_ = partialSuccess(body)
		for _, trailer := range []string{"0", "14", ""} {
			resp := &http.Response{StatusCode: 200, Header: http.Header{}, Trailer: http.Header{}}
			if trailer != "" {
				resp.Trailer.Set("grpc-status", trailer)
			}
			_ = grpcAnswer(resp, body)
		}

		var ps []byte
		if rejected != 0 {
			ps = protowire.AppendTag(ps, 1, protowire.VarintType)
			ps = protowire.AppendVarint(ps, rejected)
		}
		if why != "" {
			ps = protowire.AppendTag(ps, 2, protowire.BytesType)
			ps = protowire.AppendString(ps, why)
		}
		msg := protowire.AppendTag(nil, 1, protowire.BytesType)
		msg = protowire.AppendBytes(msg, ps)
		err := partialSuccess(msg)
		if (err == nil) != (rejected == 0 && why == "") {
			t.Fatalf("rejected %d %q: %v", rejected, why, err)
		}
		if err != nil && !strings.Contains(err.Error(), "rejected "+strconv.FormatUint(rejected, 10)+" ") {
			t.Fatalf("rejected %d: %v", rejected, err)
		}
		framed := make([]byte, 5, 5+len(msg))
		binary.BigEndian.PutUint32(framed[1:], uint32(len(msg)))
		framed = append(framed, msg...)
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, Trailer: http.Header{"Grpc-Status": {"0"}}, Body: io.NopCloser(bytes.NewReader(nil))}
		if gerr := grpcAnswer(resp, framed); (gerr == nil) != (err == nil) {
			t.Fatalf("over gRPC %v, over http %v", gerr, err)
		}
	})
}

// FuzzOTLPHeaders: OTEL_EXPORTER_OTLP_HEADERS is read without a panic,
// and headers written in its form (keys plain, values percent-encoded)
// are read back as they were.
func FuzzOTLPHeaders(f *testing.F) {
	f.Add("api-key=secret,other=a%20b", "x-key", "v=1,2")
	f.Add("=,,=x", "k", "")
	f.Fuzz(func(t *testing.T, raw, key, value string) {
		_, _ = parseHeaders(raw)
		key = strings.TrimSpace(key)
		if key == "" || strings.ContainsAny(key, "=,%") {
			return
		}
		got, err := parseHeaders(key + "=" + url.PathEscape(value))
		if err != nil {
			t.Fatalf("%q=%q: %v", key, value, err)
		}
		if got[key] != strings.TrimSpace(value) && got[key] != value {
			t.Fatalf("%q=%q read back as %q", key, value, got[key])
		}
	})
}

// FuzzEncodeSpans: whatever a span holds (names, keys and values come from
// the model and the tools) is encoded as proto.Marshal encodes the OTLP
// messages of it, byte for byte, and a string that is not UTF-8 is an
// error where it is one for proto.Marshal.
func FuzzEncodeSpans(f *testing.F) {
	f.Add("chat gpt", "gen_ai.response.id", "resp_1", int64(7), 0.5, true, "denied", uint16(3))
	f.Add("", "", "", int64(-1), math.Inf(1), false, "", uint16(300))
	f.Fuzz(func(t *testing.T, name, key, value string, n int64, x float64, flag bool, desc string, repeat uint16) {
		long := strings.Repeat(value, int(repeat%512))
		stub := tracetest.SpanStub{
			Name: name,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(n), 1}, SpanID: trace.SpanID{byte(n >> 8), 2},
				TraceFlags: trace.TraceFlags(n)}),
			SpanKind:  trace.SpanKind(n & 7),
			StartTime: time.Unix(0, n), EndTime: time.Unix(0, n).Add(time.Duration(repeat)),
			Attributes: []attribute.KeyValue{attribute.String(key, value), attribute.Int64(key, n), attribute.Float64(key, x),
				attribute.Bool(key, flag), attribute.String("long", long), attribute.StringSlice(key, []string{value, desc}),
				attribute.Int64Slice(key, []int64{n, -n})},
			Events:               []sdktrace.Event{{Name: desc, Time: time.Unix(0, n), Attributes: []attribute.KeyValue{attribute.String(key, long)}, DroppedAttributeCount: int(repeat)}},
			Status:               sdktrace.Status{Code: codes.Code(n & 3), Description: desc},
			DroppedAttributes:    int(repeat),
			Resource:             resource.NewSchemaless(attribute.String(key, value)),
			InstrumentationScope: instrumentation.Scope{Name: name, Version: value},
		}
		spans := tracetest.SpanStubs{stub, stub}.Snapshots()
		want, werr := exportRequest(resourceSpans(spans))
		got, err := appendExportSpans(nil, spans)
		if (err != nil) != (werr != nil) {
			t.Fatalf("error %v, proto.Marshal's %v", err, werr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the encoding differs from proto.Marshal's:\n got %x\nwant %x", got, want)
		}
	})
}
