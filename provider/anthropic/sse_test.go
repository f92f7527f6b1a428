package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

type sseEvent struct{ name, data string }

// readAll reads every event of r: the events, and the error that ended
// them.
func readAll(r *sseReader) ([]sseEvent, error) {
	var out []sseEvent
	for {
		name, data, err := r.next()
		if err != nil {
			return out, err
		}
		out = append(out, sseEvent{name, string(data)})
	}
}

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []sseEvent
		err  error
	}{
		{"one", "event: a\ndata: {}\n\n", []sseEvent{{"a", "{}"}}, io.EOF},
		{"crlf", "event: a\r\ndata: 1\r\n\r\n", []sseEvent{{"a", "1"}}, io.EOF},
		{"multi-line data", "data: a\ndata:b\ndata:  c\ndata\n\n", []sseEvent{{"", "a\nb\n c\n"}}, io.EOF},
		{"comments and other fields", ": hi\nid: 7\nretry: 10\nevent:x\nfoo: bar\ndata: d\n\n", []sseEvent{{"x", "d"}}, io.EOF},
		{"blank lines alone dispatch nothing", "\n\n: c\n\n\r\n", nil, io.EOF},
		{"an event without data", "event: message_stop\n\n", []sseEvent{{"message_stop", ""}}, io.EOF},
		{"the last event never ended", "event: a\ndata: 1\n\nevent: b\ndata: 2\n", []sseEvent{{"a", "1"}}, io.EOF},
		{"cut mid-line", "event: a\ndata: 1\n\nevent: b\ndata: 2", []sseEvent{{"a", "1"}}, io.EOF},
		{"a lone CR ends the body", "data: 1\n\r", []sseEvent{{"", "1"}}, io.EOF},
		{"an event past the bound", "data: " + strings.Repeat("x", 40) + "\n\n", nil, errTooLarge},
		{"a line past the bound, never ended", "data: " + strings.Repeat("x", 100), nil, errTooLarge},
		{"events within the bound, however many", strings.Repeat("data: "+strings.Repeat("x", 30)+"\n\n", 3), []sseEvent{{"", strings.Repeat("x", 30)}, {"", strings.Repeat("x", 30)}, {"", strings.Repeat("x", 30)}}, io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(newSSEReaderSize(strings.NewReader(tc.in), 40, 16))
			if !errors.Is(err, tc.err) || len(got) != len(tc.want) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// referenceSSE reads in as the official SDK's decoder did (lines as
// bufio.ScanLines splits them, the same fields), with sseReader's bound:
// the events, and whether the bound stopped it (before the events after
// those returned). maybe is a last line, without its end, that passes the
// bound: the reader may stop at it or drop it.
func referenceSSE(in []byte, max int) (events []sseEvent, over, maybe bool) {
	name, data, size := "", []string(nil), 0
	for len(in) > 0 {
		var line []byte
		last := false
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line, in = in[:i], in[i+1:]
		} else {
			line, in, last = in, nil, true
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if name != "" || data != nil {
				events = append(events, sseEvent{name, strings.Join(data, "\n")})
			}
			name, data, size = "", nil, 0
			continue
		}
		size += len(line)
		if size > max {
			return events, !last, last
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			data = append(data, string(value))
		}
	}
	return events, false, false
}

// FuzzSSE holds sseReader to the SDK's way of reading a stream
// (referenceSSE), whatever the bytes, however the body splits them and
// whatever the reader's buffer: the same events, and an error past the
// bound where the reference passes it. A line that passes the bound at the
// very end of the body, with no line end, may stop the reader too (it
// cannot tell it will never end); the SDK's scanner dropped it.
func FuzzSSE(f *testing.F) {
	for _, seed := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
			"event: ping\ndata: {\"type\": \"ping\"}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\r\n\r\n",
		": comment\n\ndata: a\ndata: b\n\nid: 1\nretry: 5\n\n",
		"data:" + strings.Repeat("x", 50) + "\n\n", "event: a\ndata: 1\n\r", "\r\r\n\n", "data",
	} {
		f.Add([]byte(seed), uint8(0), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, split, bufSize uint8) {
		const max = 64
		var body io.Reader = bytes.NewReader(in)
		switch split % 3 {
		case 1:
			body = iotest.OneByteReader(body)
		case 2:
			body = iotest.HalfReader(body)
		}
		got, err := readAll(newSSEReaderSize(body, max, 16+int(bufSize%64)))
		want, over, maybe := referenceSSE(in, max)
		switch {
		case over && !errors.Is(err, errTooLarge):
			t.Fatalf("in %q: %v, want errTooLarge", in, err)
		case !over && err != io.EOF && !(maybe && errors.Is(err, errTooLarge)):
			t.Fatalf("in %q: %v, want io.EOF", in, err)
		case len(got) != len(want):
			t.Fatalf("in %q: events %q, want %q", in, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("in %q: event %d = %q, want %q", in, i, got[i], want[i])
			}
		}
	})
}

// TestHostileStreams: a server that breaks the protocol gets a typed error
// or a turn, never a panic or a hang.
func TestHostileStreams(t *testing.T) {
	const (
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"
		text  = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
		stop = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	)
	for _, tc := range []struct {
		name string
		body string
		kind provider.ErrorKind // "" for a turn of "hi"
	}{
		{"well formed", start + text + stop, ""},
		{"duplicate message_start", start + start + text + start + stop, ""},
		{"unknown event types are passed over", start + "event: content_block_citation\ndata: not json\n\n" + text + "event: future\ndata: {\"type\":\"content_block_delta\",\"index\":9}\n\n" + stop, ""},
		{"unnamed events are passed over", start + "data: {\"type\":\"message_stop\"}\n\n" + text + stop, ""},
		{"data that is not JSON", start + "event: content_block_delta\ndata: {\"type\":\n\n" + stop, provider.MalformedResponse},
		{"a field of the wrong type", start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\"0\"}\n\n" + stop, provider.MalformedResponse},
		{"an index never started", start + text + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" + stop, provider.MalformedResponse},
		{"a negative index", start + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" + stop, provider.MalformedResponse},
		{"a huge index", start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1e300,\"content_block\":{\"type\":\"text\"}}\n\n" + stop, provider.MalformedResponse},
		{"an index skipped", start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":5,\"content_block\":{\"type\":\"text\"}}\n\n" + stop, provider.MalformedResponse},
		{"an error after text", start + text + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}\n\n" + stop, provider.TransportFailed},
		{"an error that is not JSON", start + "event: error\ndata: <html>\n\n", provider.TransportFailed},
		{"no message_stop", start + text, provider.TransportFailed},
		{"only pings", strings.Repeat("event: ping\ndata: {\"type\":\"ping\"}\n\n", 10000), provider.TransportFailed},
		{"a huge line", start + "data: " + strings.Repeat("x", 1<<20) + "\n\n" + stop, provider.ResponseTooLarge},
		{"a huge comment", start + ":" + strings.Repeat("x", 1<<20) + "\n\n" + stop, provider.ResponseTooLarge},
		{"tool input split across deltas", start + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"calc\",\"input\":{}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\n" +
			text[:0] + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\n" + stop, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(Config{BaseURL: "http://127.0.0.1:9", Model: "m", Streaming: true, MaxResponseBytes: 64 << 10,
				Retry:      plan.TransportRetry{MaxAttempts: 1},
				HTTPClient: &http.Client{Transport: bodyTransport{body: []byte(tc.body), streaming: true}}})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			resp, err := m.Stream(ctx, ask("x"), nil)
			if ctx.Err() != nil {
				t.Fatal("Stream hung")
			}
			if tc.kind == "" {
				if err != nil || resp.Content != "hi" {
					t.Fatalf("resp %+v, err %v; want a turn of hi", resp, err)
				}
				return
			}
			wantKind(t, err, tc.kind, "")
		})
	}
}

// TestEndlessPingsMeetTheIdleTimeout: pings are not events of the turn, so
// a server that sends nothing else is idle, however many it sends.
func TestEndlessPingsMeetTheIdleTimeout(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() {
		w := bufio.NewWriter(pw)
		w.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n")
		for {
			if _, err := w.WriteString("event: ping\ndata: {\"type\":\"ping\"}\n\n"); err != nil {
				return
			}
			if w.Flush() != nil {
				return
			}
		}
	}()
	m, err := New(Config{BaseURL: "http://127.0.0.1:9", Model: "m", Streaming: true,
		Timeouts:   plan.ModelTimeouts{Idle: plan.Duration(50 * time.Millisecond)},
		Retry:      plan.TransportRetry{MaxAttempts: 1},
		HTTPClient: &http.Client{Transport: pipeTransport{body: pr}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err = m.Stream(ctx, ask("x"), nil)
	if ctx.Err() != nil {
		t.Fatal("Stream hung")
	}
	wantKind(t, err, provider.Timeout, "idle")
}

// pipeTransport answers with a stream read from body, ended by the
// request's context.
type pipeTransport struct{ body *io.PipeReader }

func (p pipeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	go func() {
		<-req.Context().Done()
		p.body.CloseWithError(req.Context().Err())
	}()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: p.body, Request: req}, nil
}
