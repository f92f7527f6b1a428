package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
)

// emptyParameters is sent for a tool without a schema: OpenAI rejects a null
// "parameters".
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// wireCache holds the messages and tools of the last request as they went
// on the wire. A loop's conversation grows by a message or two per call, and
// its tools do not change, so most of a request is what the previous one
// sent. Reuse is decided by comparing each incoming message and tool with the
// cached wire value field by field (strings that are the same memory compare
// in constant time), never by slice identity, so a caller that edits its
// conversation in place is never sent stale text.
//
// It is safe for concurrent use. The first len(messages) elements of a
// cached slice are never written again, only read; the slice is replaced
// under mu. A request whose messages extend the whole cached conversation
// takes the cache (leaving it empty, so no one else can claim the same
// spare capacity) and appends its new messages in the backing array's spare
// capacity, past the end of every slice already handed out, so no request
// in flight sees them change: its slice is shorter. Any other request builds
// a new slice (with room to grow) from the matching prefix. So a growing
// conversation costs amortized O(1) wire messages per call instead of a new
// full copy. go-openai only reads what it is given, so a shared tool-call
// slice or function definition is never written. Concurrent runs of
// different conversations only make each other convert more.
//
// Each message is also kept encoded (encoded[i] is messages[i] as
// json.Marshal writes it, in a parallel slice with the same capacity), so a
// request's body costs one encoding per new message, not one per message
// per call: the messages array is what grows, and encoding it was most of
// a long run's client-side cost (see wireBody).
type wireCache struct {
	mu       sync.Mutex
	messages []goopenai.ChatCompletionMessage
	encoded  [][]byte
	tools    []goopenai.Tool
}

func (c *wireCache) load() ([]goopenai.ChatCompletionMessage, [][]byte, []goopenai.Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.messages, c.encoded, c.tools
}

// claim empties the cache if it still holds exactly prev, so the caller
// alone may append to prev's spare capacity.
func (c *wireCache) claim(prev []goopenai.ChatCompletionMessage) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(prev) == 0 || len(c.messages) != len(prev) || &c.messages[0] != &prev[0] {
		return false
	}
	c.messages = nil
	return true
}

func (c *wireCache) store(messages []goopenai.ChatCompletionMessage, encoded [][]byte, tools []goopenai.Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.messages, c.encoded, c.tools = messages, encoded, tools
}

// sameMessage reports whether wire is what converting msg gives. A cached
// wire message passed the checks of chatRequest, and equal fields pass them
// again, so a reused message needs no new check.
func sameMessage(wire *goopenai.ChatCompletionMessage, msg *provider.Message) bool {
	if wire.Role != string(msg.Role) || wire.Content != msg.Content || wire.ToolCallID != msg.ToolCallID || len(wire.ToolCalls) != len(msg.ToolCalls) {
		return false
	}
	for i := range msg.ToolCalls {
		w, c := &wire.ToolCalls[i], &msg.ToolCalls[i]
		if w.ID != c.ID || w.Function.Name != c.Name || w.Function.Arguments != c.Arguments {
			return false
		}
	}
	return true
}

// sameTool reports whether wire is what converting t gives.
func sameTool(wire *goopenai.Tool, t *provider.ToolSpec) bool {
	params := t.Parameters
	if len(params) == 0 {
		params = emptyParameters
	}
	f := wire.Function
	if f.Name != t.Name || f.Description != t.Description {
		return false
	}
	have, ok := f.Parameters.(json.RawMessage)
	return ok && bytes.Equal(have, params)
}

// chatRequest maps a provider request to the wire, with each of its messages
// encoded (encoded[i] is json.Marshal(out.Messages[i]); nil when there are
// no messages). Mistakes the server would reject anyway are caught here,
// with a clearer message.
func (m *Model) chatRequest(req provider.Request) (out goopenai.ChatCompletionRequest, encoded [][]byte, err error) {
	out = goopenai.ChatCompletionRequest{Model: m.cfg.Model}
	if req.Model != "" {
		out.Model = req.Model
	}
	prevMessages, prevEncoded, prevTools := m.wire.load()
	// same: how many leading messages the cache already holds converted.
	same := 0
	for same < len(req.Messages) && same < len(prevMessages) && sameMessage(&prevMessages[same], &req.Messages[same]) {
		same++
	}
	switch n := len(req.Messages); {
	case n == 0: // none stays nil: "messages":null, as ever
	case same == len(prevMessages) && n <= cap(prevMessages) && m.wire.claim(prevMessages):
		out.Messages = prevMessages[:n]
		encoded = prevEncoded[:n]
	default:
		out.Messages = make([]goopenai.ChatCompletionMessage, n, n+max(n, 16))
		copy(out.Messages, prevMessages[:same])
		encoded = make([][]byte, n, cap(out.Messages))
		copy(encoded, prevEncoded[:same])
	}
	for i := same; i < len(req.Messages); i++ {
		msg := &req.Messages[i]
		wire := &out.Messages[i]
		*wire = goopenai.ChatCompletionMessage{Content: msg.Content}
		switch msg.Role {
		case provider.System, provider.User:
			wire.Role = string(msg.Role)
		case provider.Assistant:
			wire.Role = string(msg.Role)
			if len(msg.ToolCalls) > 0 {
				wire.ToolCalls = make([]goopenai.ToolCall, len(msg.ToolCalls))
				for j, c := range msg.ToolCalls {
					wire.ToolCalls[j] = goopenai.ToolCall{
						ID: c.ID, Type: goopenai.ToolTypeFunction,
						Function: goopenai.FunctionCall{Name: c.Name, Arguments: c.Arguments},
					}
				}
			}
		case provider.ToolRole:
			wire.Role = string(msg.Role)
			wire.ToolCallID = msg.ToolCallID
			if msg.ToolCallID == "" {
				return out, nil, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: a tool message needs the tool_call_id it answers", i))
			}
		default:
			return out, nil, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: unknown role %q", i, msg.Role))
		}
		b, err := json.Marshal(wire)
		if err != nil {
			return out, nil, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: %w", i, err))
		}
		encoded[i] = b
	}
	if len(req.Tools) > 0 {
		if len(prevTools) == len(req.Tools) && sameTools(prevTools, req.Tools) {
			out.Tools = prevTools
		} else {
			out.Tools = make([]goopenai.Tool, len(req.Tools))
			for i, t := range req.Tools {
				params := t.Parameters
				if len(params) == 0 {
					params = emptyParameters
				}
				out.Tools[i] = goopenai.Tool{
					Type:     goopenai.ToolTypeFunction,
					Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
				}
			}
		}
	}
	tools := out.Tools
	if len(tools) == 0 {
		tools = prevTools // a call without tools does not forget them
	}
	m.wire.store(out.Messages, encoded, tools)
	// tool_choice without tools is an error at OpenAI; with no tools there is
	// nothing to choose, so it is left out.
	switch tc := req.ToolChoice; {
	case len(req.Tools) == 0 || tc == "":
	case tc == "auto" || tc == "required" || tc == "none":
		out.ToolChoice = tc
	case hasTool(req.Tools, tc):
		out.ToolChoice = goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: tc}}
	default:
		return out, nil, m.typed(provider.InvalidRequest, "tool_choice", 0, fmt.Errorf("tool_choice %q is not auto, required, none or one of the request's tools", tc))
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		if t == 0 {
			// go-openai drops a zero temperature (omitempty); the smallest
			// float32 is sent instead, which every server treats as 0.
			t = math.SmallestNonzeroFloat32
		}
		out.Temperature = t
	}
	if req.MaxOutputTokens > 0 {
		if m.maxCompletionTokens {
			out.MaxCompletionTokens = req.MaxOutputTokens
		} else {
			out.MaxTokens = req.MaxOutputTokens
		}
	}
	if req.JSON {
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	if m.cfg.Streaming {
		out.Stream = true
		out.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	}
	return out, encoded, nil
}

func sameTools(wire []goopenai.Tool, tools []provider.ToolSpec) bool {
	for i := range tools {
		if !sameTool(&wire[i], &tools[i]) {
			return false
		}
	}
	return true
}

func hasTool(tools []provider.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
