package openai

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
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
		{"endless content", fakeserver.Flood{Chunk: 4096}, true, "passed max_response_bytes"},
		{"arguments in pieces", fakeserver.Flood{Arguments: true, Bytes: 10 << 20, Chunk: 8192}, true, "passed max_response_bytes"},
		{"arguments in one line", fakeserver.Flood{Arguments: true, Bytes: 10 << 20, OneLine: true}, true, "a line of the stream is longer than"},
		{"endless line of content", fakeserver.Flood{OneLine: true}, true, "a line of the stream is longer than"},
		{"plain content", fakeserver.Flood{Bytes: 10 << 20}, false, "body is longer than"},
		{"plain arguments within the body's bound", fakeserver.Flood{Arguments: true, Bytes: limit + 1000}, false, "passed max_response_bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, func(c *Config) { c.Streaming = tc.streaming; c.MaxResponseBytes = limit },
				fakeserver.Reply{Flood: &tc.flood}, fakeserver.Text("a retry"))
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			var got provider.Event
			_, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) {
				got.ContentDelta += e.ContentDelta
				got.ToolCallDelta += e.ToolCallDelta
			})
			pe := wantKind(t, err, provider.ResponseTooLarge, "")
			if !strings.Contains(pe.Error(), tc.message) {
				t.Errorf("error %q does not say %q", pe, tc.message)
			}
			if n := len(got.ContentDelta) + len(got.ToolCallDelta); n > limit {
				t.Errorf("%d bytes were delivered, more than the cap of %d", n, limit)
			}
			if n := len(s.server.Requests()); n != 1 {
				t.Errorf("%d requests: a response too large was retried", n)
			}
		})
	}
}

// TestResponseAtTheCap: a response of exactly max_response_bytes passes,
// one byte more does not; a tool call counts its name, id and 64 bytes.
func TestResponseAtTheCap(t *testing.T) {
	const limit = 4096
	for _, streaming := range []bool{true, false} {
		at := strings.Repeat("x", limit)
		s := newSetup(t, func(c *Config) { c.Streaming = streaming; c.MaxResponseBytes = limit },
			fakeserver.Reply{Chunks: []string{at[:1000], at[1000:]}},
			fakeserver.Reply{Chunks: []string{at, "y"}},
			// 64 + len("c1") + len("calc") + arguments = limit
			fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calc", Arguments: `"` + strings.Repeat("1", limit-64-2-4-2) + `"`}}},
			fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calc", Arguments: `"` + strings.Repeat("1", limit-64-2-4-1) + `"`}}},
		)
		if resp, _, err := s.call(t, ask("x")); err != nil || resp.Content != at {
			t.Errorf("streaming=%v: content of exactly the cap: %v", streaming, err)
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

// TestFloodOfEmptyToolCalls: calls without names, ids or arguments each
// count 64 bytes, so a flood of them ends at the cap too.
func TestFloodOfEmptyToolCalls(t *testing.T) {
	var body strings.Builder
	for i := range 2000 {
		body.WriteString(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":` + itoa(i) + `,"function":{"arguments":""}}]}}]}` + "\n\n")
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

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

// TestCallerStopsTheStreamFromOnEvent: a caller that cancels its context
// inside onEvent (the engine, when the budget runs out) gets no event
// after, though the stream has more buffered.
func TestCallerStopsTheStreamFromOnEvent(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Flood: &fakeserver.Flood{Chunk: 16}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, after := 0, 0
	_, err := s.model.Stream(ctx, ask("x"), func(provider.Event) {
		if ctx.Err() != nil {
			after++
		}
		if events++; events == 10 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || provider.KindOf(err) != "" {
		t.Errorf("err = %v, want the caller's context.Canceled", err)
	}
	if after > 0 {
		t.Errorf("%d events were delivered after the caller cancelled", after)
	}
}

// TestToolCallDeltasAreCountedNotShown: tool calls reach onEvent piece by
// piece as ToolCallDelta, for counting; they do not count as delivered
// text, so a stream cut off during them is still retried.
func TestToolCallDeltasAreCountedNotShown(t *testing.T) {
	call := fakeserver.ToolCall{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`, ArgumentChunks: []string{`{"expression"`, `:"6*7"}`}}
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming },
			fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{call}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 3},
			fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{call}})
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		var pieces []string
		resp, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) {
			if e.ContentDelta != "" || e.ReasoningDelta != "" {
				t.Errorf("streaming=%v: a tool call was shown: %+v", streaming, e)
			}
			if e.Started {
				return
			}
			pieces = append(pieces, e.ToolCallDelta)
		})
		if err != nil || len(resp.ToolCalls) != 1 {
			t.Fatalf("streaming=%v: %+v, %v", streaming, resp, err)
		}
		want := []string{"calculator", `{"expression"`, `:"6*7"}`}
		if !streaming {
			want = []string{"calculator", `{"expression":"6*7"}`}
		} else {
			// The cut-off attempt's pieces came first, and count too.
			want = append([]string{"calculator", `{"expression"`}, want...)
		}
		if diff := cmp.Diff(want, pieces); diff != "" {
			t.Errorf("streaming=%v: pieces (-want +got):\n%s", streaming, diff)
		}
	}
}

// TestErrorBodyIsBounded: an error response's body is read up to 64 KiB,
// not to its end, and the error is what its status says, not
// response_too_large.
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
		// The connection is dropped once the call ends; the server gets
		// rid of what the socket buffers hold, far less than it meant to.
		if n := <-written; n >= sent {
			t.Errorf("streaming=%v: the whole %d-byte error body was read", streaming, n)
		}
		ts.Close()
	}
}

// TestEventStreamKeepsNothingOfCommentsAndFields: a long stream that
// carries a comment and an event: field with every chunk (as some servers
// do) works, though go-openai would keep every one of those lines.
func TestEventStreamKeepsNothingOfCommentsAndFields(t *testing.T) {
	var body strings.Builder
	for range 20000 {
		body.WriteString(": keep-alive\nevent: message\nid: 7\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\n\n")
	}
	body.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body.String())
	}))
	defer ts.Close()
	m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Stream(context.Background(), ask("x"), nil)
	if err != nil || len(resp.Content) != 40000 {
		t.Fatalf("%d bytes of content, %v", len(resp.Content), err)
	}

	// Lines go-openai keeps, past 64 KiB of them, end the stream.
	body.Reset()
	for range 5000 {
		body.WriteString("unknown line that go-openai keeps\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\n\n")
	}
	_, err = m.Stream(context.Background(), ask("x"), nil)
	pe := wantKind(t, err, provider.ResponseTooLarge, "")
	if !strings.Contains(pe.Error(), "outside its data: lines") {
		t.Errorf("error %q", pe)
	}
}

func TestEventStream(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"data: x\n\ndata: [DONE]\n\n", "data: x\n\ndata: [DONE]\n\n"},
		{": comment\ndata: x\n", "\ndata: x\n"},
		{"event: ping\nid: 3\nretry: 10\ndata:x\n", "\n\n\ndata:x\n"},
		{"\r\n  \n", "\r\n  \n"},
		{"{\"error\":{\"message\":\"boom\"}}\n", "{\"error\":{\"message\":\"boom\"}}\n"},
		{"  data: x\n", "  data: x\n"},
		{"dat", "dat"},
		{"event: cut", ""},
		{"data: cut", "data: cut"},
		{"ev\n", "ev\n"},
	} {
		for _, r := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.HalfReader} {
			s := newEventStream(io.NopCloser(r(strings.NewReader(tc.in))), 1<<20, 1<<20, nil)
			got, err := io.ReadAll(iotest.OneByteReader(s))
			if err != nil || string(got) != tc.out {
				t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.out)
			}
		}
	}
}

// FuzzEventStream holds eventStream to a line-by-line reference of its
// rules, whatever the bytes and however the body and the reader split
// them: the output is the reference's, or, when a bound is passed, a
// prefix of it ending in errTooLarge.
func FuzzEventStream(f *testing.F) {
	for _, seed := range []string{
		"data: {\"choices\":[]}\n\ndata: [DONE]\n\n",
		": c\nevent: e\nid: 1\nretry: 2\ndata: d\n\n",
		"x\ny\nzz\n",
		"   \n\t\r\n        \n",
		"data: " + strings.Repeat("a", 100) + "\n",
		"dat", "\xc2\x85\n", "ev", "event", ":",
		"data: [DONE]", "data:[DONE] \r\n", "data: [DONE]x\n", "data:  [DO", ": data: [DONE]\n",
	} {
		f.Add([]byte(seed), uint8(1), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, split, readSize uint8) {
		const maxLine, maxOther = 40, 60
		want, wantOver := referenceStream(in, maxLine, maxOther)
		var body io.Reader = bytes.NewReader(in)
		switch split % 3 {
		case 1:
			body = iotest.OneByteReader(body)
		case 2:
			body = iotest.HalfReader(body)
		}
		s := newEventStream(io.NopCloser(body), maxLine, maxOther, &exchange{})
		var got []byte
		buf := make([]byte, int(readSize%16)+1)
		var err error
		for {
			var n int
			n, err = s.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		if wantOver {
			if !errors.Is(err, errTooLarge) || !bytes.HasPrefix(want, got) || s.ex.over == nil {
				t.Fatalf("in %q: got %q, %v; want a prefix of %q and errTooLarge", in, got, err, want)
			}
			return
		}
		if err != io.EOF || !bytes.Equal(got, want) {
			t.Fatalf("in %q: got %q, %v; want %q", in, got, err, want)
		}
		if s.ex.done != referenceDone(in) {
			t.Fatalf("in %q: done %v, want %v", in, s.ex.done, !s.ex.done)
		}
	})
}

// referenceDone reports whether a whole line of in is the end of a stream:
// "data:", then "[DONE]" with only ASCII white space around it.
func referenceDone(in []byte) bool {
	for line := range bytes.Lines(in) {
		if rest, ok := bytes.CutPrefix(line, dataField); ok && string(bytes.Trim(rest, " \t\r\n\f")) == "[DONE]" {
			return true
		}
	}
	return false
}

// referenceStream applies eventStream's rules to whole lines.
func referenceStream(in []byte, maxLine, maxOther int) (out []byte, over bool) {
	other := 0
	for len(in) > 0 {
		line := in
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line = in[:i+1]
		}
		in = in[len(line):]
		ended := line[len(line)-1] == '\n'
		kind := "other"
		switch {
		case bytes.HasPrefix(line, dataField):
			kind = "pass"
		case line[0] == ':' || hasAnyPrefix(line, droppedFields):
			kind = "drop"
		case ended && blank(line) && len(line) <= headMax:
			kind = "pass"
		case !ended && len(line) < headMax && (isPrefix(line, dataField) || anyIsPrefix(line, droppedFields) || blank(line)):
			// Cut off before its kind was known: passed as it is.
			return append(out, line...), false
		}
		switch kind {
		case "drop":
			if ended {
				out = append(out, '\n')
			}
			continue
		case "other":
			other += len(line)
		}
		if len(line) > maxLine || other > maxOther {
			// Part of the line may have been passed on first.
			return append(out, line...), true
		}
		out = append(out, line...)
	}
	return out, false
}
