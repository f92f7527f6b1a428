package anthropic

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestResponseTooLarge floods the provider past its max_response_bytes in
// every shape a response can take: the call must end with
// response_too_large, not be retried, and have delivered no more than the
// cap.
func TestResponseTooLarge(t *testing.T) {
	const limit = 64 << 10
	for _, tc := range []struct {
		name      string
		flood     fakeserver.Flood
		streaming bool
		message   string
	}{
		{"endless text", fakeserver.Flood{Chunk: 4096}, true, "passed max_response_bytes"},
		{"input in pieces", fakeserver.Flood{Arguments: true, Bytes: 10 << 20, Chunk: 8192}, true, "passed max_response_bytes"},
		{"input in one event", fakeserver.Flood{Arguments: true, Bytes: 10 << 20, OneLine: true}, true, "an event of the stream is longer than"},
		{"endless event of text", fakeserver.Flood{OneLine: true}, true, "an event of the stream is longer than"},
		{"plain text", fakeserver.Flood{Bytes: 10 << 20}, false, "body is longer than"},
		{"plain input within the body's bound", fakeserver.Flood{Arguments: true, Bytes: limit + 1000}, false, "passed max_response_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, func(c *Config) { c.Streaming = tc.streaming; c.MaxResponseBytes = limit },
				fakeserver.Reply{Flood: &tc.flood}, fakeserver.Text("a retry"))
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			delivered := 0
			_, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) {
				delivered += len(e.ContentDelta) + len(e.ToolCallDelta) + len(e.ReasoningDelta)
			})
			pe := wantKind(t, err, provider.ResponseTooLarge, "")
			if !strings.Contains(pe.Error(), tc.message) {
				t.Errorf("error %q does not say %q", pe, tc.message)
			}
			if delivered > limit {
				t.Errorf("%d bytes were delivered, more than the cap of %d", delivered, limit)
			}
			if n := len(s.server.Requests()); n != 1 {
				t.Errorf("%d requests: a response too large was retried", n)
			}
		})
	}
}

// TestResponseAtTheCap: a response of exactly max_response_bytes passes,
// one byte more does not; a block counts 64 bytes besides its text, and a
// tool use its id and name too.
func TestResponseAtTheCap(t *testing.T) {
	const limit = 4096
	for _, streaming := range []bool{true, false} {
		at := strings.Repeat("x", limit-64)
		args := func(n int) string { return `{"a":"` + strings.Repeat("1", n-8) + `"}` }
		s := newSetup(t, func(c *Config) { c.Streaming = streaming; c.MaxResponseBytes = limit },
			fakeserver.Reply{Chunks: []string{at[:1000], at[1000:]}},
			fakeserver.Reply{Chunks: []string{at, "y"}},
			// 64 + len("c1") + len("calc") + input = limit
			fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calc", Arguments: args(limit - 64 - 2 - 4)}}},
			fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calc", Arguments: args(limit - 64 - 2 - 4 + 1)}}},
		)
		if resp, _, err := s.call(t, ask("x")); err != nil || resp.Content != at {
			t.Errorf("streaming=%v: text of exactly the cap: %v", streaming, err)
		}
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.ResponseTooLarge, "")
		if _, _, err := s.call(t, ask("x")); err != nil {
			t.Errorf("streaming=%v: a tool call of exactly the cap: %v", streaming, err)
		}
		_, _, err = s.call(t, ask("x"))
		wantKind(t, err, provider.ResponseTooLarge, "")
	}
}

// TestFloodOfEmptyBlocks: blocks without text each count 64 bytes, so a
// flood of them ends at the cap too.
func TestFloodOfEmptyBlocks(t *testing.T) {
	var body strings.Builder
	body.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n")
	for i := range 2000 {
		body.WriteString(`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":` + strconv.Itoa(i) + `,"content_block":{"type":"tool_use","id":"","name":"","input":{}}}` + "\n\n")
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body.String())
	}))
	defer ts.Close()
	m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true, MaxResponseBytes: 64 * 1000})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Stream(context.Background(), ask("x"), nil)
	wantKind(t, err, provider.ResponseTooLarge, "")
}

// TestErrorBodyIsBounded: the SDK reads an error body whole; only its
// first 64 KiB reach it.
func TestErrorBodyIsBounded(t *testing.T) {
	const sent = 64 << 20
	for _, streaming := range []bool{true, false} {
		written := make(chan int, 1)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			chunk := bytes.Repeat([]byte("e"), 1<<20)
			n := 0
			defer func() { written <- n }()
			for n < sent {
				m, err := w.Write(chunk)
				n += m
				if err != nil {
					return
				}
			}
		}))
		m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: streaming})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Stream(context.Background(), ask("x"), nil)
		pe := wantKind(t, err, provider.InvalidRequest, "")
		if pe.StatusCode != http.StatusBadRequest || len(pe.Error()) > 1000 {
			t.Errorf("streaming=%v: %.300v", streaming, pe)
		}
		if n := <-written; n >= sent {
			t.Errorf("streaming=%v: the whole %d-byte error body was read", streaming, n)
		}
		ts.Close()
	}
}

// TestCallerStopsTheStreamFromOnEvent: a caller that cancels its context
// inside onEvent (the engine, when the budget runs out) gets no event
// after, though the stream has more buffered.
func TestCallerStopsTheStreamFromOnEvent(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Text("a", "b", "c", "d"))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := errors.New("over budget")
	var got []string
	_, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) {
		if e.ContentDelta == "" {
			return
		}
		got = append(got, e.ContentDelta)
		cancel(stop)
	})
	if !errors.Is(err, context.Canceled) || len(got) != 1 {
		t.Fatalf("err %v after %q; want the caller's cancellation after one delta", err, got)
	}
}

// TestEventBound: events pass unchanged however long the stream; one event
// past the bound ends it with the error recorded.
func TestEventBound(t *testing.T) {
	ok := strings.Repeat("event: x\ndata: "+strings.Repeat("a", 20)+"\n\n", 1000) + ": ping\r\n\r\n"
	ex := &exchange{}
	got, err := io.ReadAll(&eventBound{body: io.NopCloser(strings.NewReader(ok)), max: 40, ex: ex})
	if err != nil || string(got) != ok || ex.over != nil {
		t.Fatalf("err %v, over %v, %d of %d bytes", err, ex.over, len(got), len(ok))
	}
	long := "data: a\ndata: b\ndata: " + strings.Repeat("c", 30) + "\n\n"
	_, err = io.ReadAll(&eventBound{body: io.NopCloser(strings.NewReader(long)), max: 40, ex: ex})
	if !errors.Is(err, errTooLarge) || ex.over == nil {
		t.Fatalf("an event of data lines past the bound: err %v", err)
	}
}

// FuzzEventBound holds eventBound to a line-by-line reference of its rule,
// whatever the bytes and however the body and the reader split them: the
// output is the input, or, when an event passes the bound, a prefix of it
// ending in errTooLarge.
func FuzzEventBound(f *testing.F) {
	for _, seed := range []string{
		"event: a\ndata: {}\n\n", "data: x\r\n\r\ndata: y\n\n", ": c\n\n\n\n",
		"data: " + strings.Repeat("a", 60) + "\n", "\r\r\n\n", "x",
	} {
		f.Add([]byte(seed), uint8(1), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, split, readSize uint8) {
		const max = 30
		wantOver := referenceOver(in, max)
		var body io.Reader = bytes.NewReader(in)
		switch split % 3 {
		case 1:
			body = iotest.OneByteReader(body)
		case 2:
			body = iotest.HalfReader(body)
		}
		e := &eventBound{body: io.NopCloser(body), max: max, ex: &exchange{}}
		var got []byte
		buf := make([]byte, int(readSize%16)+1)
		var err error
		for {
			var n int
			n, err = e.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		if wantOver {
			if !errors.Is(err, errTooLarge) || !bytes.HasPrefix(in, got) || e.ex.over == nil {
				t.Fatalf("in %q: got %q, %v; want a prefix and errTooLarge", in, got, err)
			}
			return
		}
		if err != io.EOF || !bytes.Equal(got, in) {
			t.Fatalf("in %q: got %q, %v; want it all", in, got, err)
		}
	})
}

// referenceOver applies eventBound's rule to whole lines: an event is the
// lines since the last blank one ("\n" or "\r\n"), and it passes max when
// its bytes before some line's end do.
func referenceOver(in []byte, max int) bool {
	event := 0
	for len(in) > 0 {
		line := in
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line = in[:i+1]
		}
		in = in[len(line):]
		text := bytes.TrimSuffix(line, []byte("\n"))
		if len(text) > 0 && event+len(text) > max {
			return true
		}
		event += len(line)
		if bytes.HasSuffix(line, []byte("\n")) && (len(text) == 0 || string(text) == "\r") {
			event = 0
		}
	}
	return false
}

// bodyTransport answers every request with one body, in memory.
type bodyTransport struct {
	body      []byte
	streaming bool
}

func (b bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct := "application/json"
	if b.streaming {
		ct = "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(b.body)), Request: req}, nil
}

// FuzzMessagesStream runs the provider over any body a server may send,
// streamed or plain: it must end, with a turn that has text or tool calls
// and delivered no more than the cap, or with a typed error, never a panic.
func FuzzMessagesStream(f *testing.F) {
	for _, seed := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		"event: ping\ndata: {}\n\n: comment\n\ndata: {not json\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":-1}\n\n",
		"",
	} {
		f.Add([]byte(seed), true)
	}
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
		`{"content":[{"type":"tool_use","id":"t","name":"x","input":{"a":1}}],"stop_reason":"tool_use"}`,
		`{"content":[{"type":"thinking","thinking":"hm","signature":"s"}],"stop_reason":"refusal"}`,
		`{"content":[]}`, `[1,2]`, `null`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, streaming bool) {
		const limit = 1 << 10
		m, err := New(Config{BaseURL: "http://127.0.0.1:9", Model: "m", Streaming: streaming, MaxResponseBytes: limit,
			HTTPClient: &http.Client{Transport: bodyTransport{body: body, streaming: streaming}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		delivered := 0
		resp, err := m.Stream(ctx, ask("x"), func(e provider.Event) {
			delivered += len(e.ContentDelta) + len(e.ReasoningDelta) + len(e.ToolCallDelta)
		})
		switch {
		case ctx.Err() != nil:
			t.Fatal("Stream hung")
		case err != nil && provider.KindOf(err) == "":
			t.Fatalf("untyped error %v (%T)", err, err)
		case err == nil && resp.Content == "" && len(resp.ToolCalls) == 0:
			t.Fatal("an empty turn was returned without an error")
		case delivered > limit:
			t.Fatalf("%d bytes delivered past the cap of %d", delivered, limit)
		}
	})
}
