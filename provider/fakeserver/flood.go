package fakeserver

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Flood is a hostile answer: content without end, or a tool call's
// arguments of any size, written as it is sent and never held whole, so the
// server's own memory stays flat however much it sends. Set it on a Reply
// (its Content, Chunks and ToolCalls' arguments are then unused; ToolCalls[0]
// names the flooded call).
type Flood struct {
	// Arguments floods the arguments of one tool call instead of the
	// content. They read {"text":"aaa…"} when the flood ends.
	Arguments bool
	// Bytes is how much content or how many bytes of arguments to send;
	// 0 sends without end, until the client goes away.
	Bytes int64
	// Chunk is the bytes of text in one streamed event (default 1024).
	Chunk int
	// OneLine sends all of it in a single event: one data: line as long
	// as the flood. (A plain answer is one JSON body either way.)
	OneLine bool
}

// floodWrite is how much text one write of a single long line carries.
const floodWrite = 64 << 10

// floodText is the text of a flood, produced in pieces: lorem ipsum for
// content, {"text":"aaa…"} for arguments.
type floodText struct {
	f    Flood
	sent int64
	fill string
}

func newFloodText(f Flood) *floodText {
	t := &floodText{f: f}
	unit := "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do "
	if f.Arguments {
		unit = strings.Repeat("a", len(unit))
	}
	t.fill = strings.Repeat(unit, floodWrite/len(unit)+1)
	return t
}

const (
	argsOpen  = `{"text":"`
	argsClose = `"}`
)

// next returns up to n bytes more of the text, "" at its end.
func (t *floodText) next(n int) string {
	end := t.sent + int64(n)
	if t.f.Bytes > 0 {
		end = min(end, t.f.Bytes)
	}
	if end <= t.sent {
		return ""
	}
	// The arguments' opening is text[:open], their closing text[close:].
	open, close := int64(0), int64(math.MaxInt64)
	if t.f.Arguments {
		open = int64(len(argsOpen))
		if t.f.Bytes > 0 {
			close = max(t.f.Bytes-int64(len(argsClose)), open)
		}
	}
	var s string
	switch {
	case t.sent < open:
		s = argsOpen[t.sent:min(end, open)]
	case t.sent >= close:
		s = argsClose[t.sent-close : end-close]
	default:
		s = t.fill[:min(min(end, close)-t.sent, int64(len(t.fill)))]
	}
	t.sent += int64(len(s))
	return s
}

// usage is what a finished flood reports: Reply.Usage when set, else the
// request estimated as for any reply and the flood's bytes as completion.
func (t *floodText) usage(r Reply, chat openai.ChatCompletionRequest) usageJSON {
	if r.Usage != nil {
		return r.usage(chat)
	}
	u := Reply{}.usage(chat)
	u.CompletionTokens = (t.sent + 3) / 4
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// jsonText is s as the inside of a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func (r Reply) floodCall() (id, name string) {
	id, name = "call_flood", "flood"
	if len(r.ToolCalls) > 0 {
		id, name = orDefault(r.ToolCalls[0].ID, id), orDefault(r.ToolCalls[0].Name, name)
	}
	return id, name
}

// floodStream streams a flood as server-sent events.
func (s *Server) floodStream(w http.ResponseWriter, r *http.Request, reply Reply, chat openai.ChatCompletionRequest, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	live := func() bool {
		select {
		case <-r.Context().Done():
			return false
		case <-s.closing:
			return false
		default:
			return true
		}
	}
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil || !live() {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(d *deltaJSON, finish *string) []byte {
		return event(completionJSON{
			ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: created, Model: chat.Model,
			Choices: []choiceJSON{{Delta: d, FinishReason: finish}},
		})
	}
	f := *reply.Flood
	text := newFloodText(f)
	zero := 0
	empty := ""
	if !write(chunk(&deltaJSON{Role: "assistant", Content: &empty}, nil)) {
		return
	}
	if f.Arguments {
		id, name := reply.floodCall()
		if !write(chunk(&deltaJSON{ToolCalls: []toolCallJSON{{Index: &zero, ID: id, Type: "function", Function: functionJSON{Name: name}}}}, nil)) {
			return
		}
	}
	if f.OneLine {
		// The event written out by hand around the text, so that it is
		// never held whole.
		head := `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1700000000,"model":` + jsonString(chat.Model) + `,"choices":[{"index":0,"delta":{"content":"`
		tail := `"},"finish_reason":null}]}` + "\n\n"
		if f.Arguments {
			head = `data: {"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1700000000,"model":` + jsonString(chat.Model) + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"`
			tail = `"}}]},"finish_reason":null}]}` + "\n\n"
		}
		if !write([]byte(head)) {
			return
		}
		for p := text.next(floodWrite); p != ""; p = text.next(floodWrite) {
			if !write([]byte(jsonText(p))) {
				return
			}
		}
		if !write([]byte(tail)) {
			return
		}
	} else {
		size := f.Chunk
		if size <= 0 {
			size = 1024
		}
		for p := text.next(size); p != ""; p = text.next(size) {
			d := &deltaJSON{Content: &p}
			if f.Arguments {
				d = &deltaJSON{ToolCalls: []toolCallJSON{{Index: &zero, Function: functionJSON{Arguments: p}}}}
			}
			if !write(chunk(d, nil)) {
				return
			}
		}
	}
	finish := "stop"
	if f.Arguments {
		finish = "tool_calls"
	}
	if !write(chunk(&deltaJSON{}, &finish)) {
		return
	}
	if includeUsage && !reply.NoUsage {
		u := text.usage(reply, chat)
		if !write(event(completionJSON{ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: created, Model: chat.Model, Choices: []choiceJSON{}, Usage: &u})) {
			return
		}
	}
	write([]byte("data: [DONE]\n\n"))
}

// floodPlain sends a flood as one plain JSON body.
func (s *Server) floodPlain(w http.ResponseWriter, r *http.Request, reply Reply, chat openai.ChatCompletionRequest) {
	w.Header().Set("Content-Type", "application/json")
	f := *reply.Flood
	text := newFloodText(f)
	head := `{"id":"chatcmpl-fake","object":"chat.completion","created":1700000000,"model":` + jsonString(chat.Model) + `,"choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail := `"},"finish_reason":"stop"}]`
	if f.Arguments {
		id, name := reply.floodCall()
		head = `{"id":"chatcmpl-fake","object":"chat.completion","created":1700000000,"model":` + jsonString(chat.Model) + `,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":` + jsonString(id) + `,"type":"function","function":{"name":` + jsonString(name) + `,"arguments":"`
		tail = `"}}]},"finish_reason":"tool_calls"}]`
	}
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	for p := text.next(floodWrite); p != ""; p = text.next(floodWrite) {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		default:
		}
		if _, err := io.WriteString(w, jsonText(p)); err != nil {
			return
		}
	}
	if !reply.NoUsage {
		u, _ := json.Marshal(text.usage(reply, chat))
		tail += `,"usage":` + string(u)
	}
	io.WriteString(w, tail+"}")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
