package anthropic

import (
	"encoding/json"
	"strings"
)

// The Messages API's JSON, as plain structs: exactly the fields symbi sends
// and reads, no more. The request's fields are in the order, and with the
// omission rules, of the official SDK's encoding (v2.17.0), so the body sent
// is byte for byte the one the SDK sent (TestWireBodies): encoding/json
// writes struct fields in declaration order, compacts and HTML-escapes raw
// JSON (tool schemas, tool inputs) as the SDK did, and leaves out every
// optional field that is not set.

// messagesBody is a request to POST /v1/messages.
type messagesBody struct {
	MaxTokens    int64          `json:"max_tokens"`
	Messages     []wireMessage  `json:"messages"`
	Model        string         `json:"model"`
	CacheControl *cacheControl  `json:"cache_control,omitempty"`
	System       []textBlock    `json:"system,omitempty"`
	Thinking     *thinkingParam `json:"thinking,omitempty"`
	ToolChoice   *toolChoice    `json:"tool_choice,omitempty"`
	Tools        []wireTool     `json:"tools,omitempty"`
	// Stream is last, where the SDK added it to the encoded body.
	Stream bool `json:"stream,omitempty"`
}

// wireMessage is one message of the conversation: role "user" or
// "assistant".
type wireMessage struct {
	Content []contentBlock `json:"content"`
	Role    string         `json:"role"`
}

// contentBlock is one block of a message, of one of the types below; the
// fields that are not its type's are nil and left out. A pointer field is
// sent when set, even empty (a thinking block's text may be "").
//
//	text:              text
//	tool_use:          id, input, name
//	tool_result:       tool_use_id, content (left out when empty)
//	thinking:          signature, thinking (sent back unchanged)
//	redacted_thinking: data (sent back unchanged)
type contentBlock struct {
	Data      *string         `json:"data,omitempty"`
	ID        *string         `json:"id,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Name      *string         `json:"name,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Text      *string         `json:"text,omitempty"`
	ToolUseID *string         `json:"tool_use_id,omitempty"`
	Content   []textBlock     `json:"content,omitempty"`
	Type      string          `json:"type"`
}

func textContent(s string) contentBlock { return contentBlock{Type: "text", Text: &s} }

func toolUseContent(id, name string, input json.RawMessage) contentBlock {
	return contentBlock{Type: "tool_use", ID: &id, Name: &name, Input: input}
}

func toolResultContent(id, text string) contentBlock {
	b := contentBlock{Type: "tool_result", ToolUseID: &id}
	if text != "" {
		b.Content = []textBlock{{Text: text, Type: "text"}}
	}
	return b
}

func thinkingContent(text, signature string) contentBlock {
	return contentBlock{Type: "thinking", Thinking: &text, Signature: &signature}
}

func redactedThinkingContent(data string) contentBlock {
	return contentBlock{Type: "redacted_thinking", Data: &data}
}

// textBlock is a text block of the system prompt or of a tool result.
type textBlock struct {
	Text string `json:"text"`
	Type string `json:"type"`
}

// wireTool is a tool the model may call. The schema goes on the wire as
// written (compacted).
type wireTool struct {
	InputSchema json.RawMessage `json:"input_schema"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
}

// toolChoice is auto, none, any, or tool with the tool's name.
type toolChoice struct {
	Name string `json:"name,omitempty"`
	Type string `json:"type"`
}

// thinkingParam is enabled with a budget, or adaptive.
type thinkingParam struct {
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
	Type         string `json:"type"`
}

// cacheControl is the request's cache breakpoint.
type cacheControl struct {
	TTL  string `json:"ttl,omitempty"`
	Type string `json:"type"`
}

// A response, plain or streamed. Only what the provider uses is decoded;
// other fields and block types are ignored, as the API adds them.

// message is a whole message: the plain response, and the message of a
// stream's message_start (with no content yet).
type message struct {
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	Content    []responseBlock `json:"content"`
	StopReason string          `json:"stop_reason"` // null while a stream goes on
	Usage      *usage          `json:"usage"`       // nil when not sent
}

// responseBlock is a content block of a response, or the block a
// content_block_start event begins.
type responseBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"` // redacted_thinking
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"` // tool_use: a plain response's whole input
}

// usage is a message's token counts.
type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// deltaUsage is message_delta's usage: each count the message's total so
// far, those it does not send left nil.
type deltaUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
}

// streamEvent is the data of one event of the stream, of any type:
//
//	message_start:       message
//	content_block_start: index, content_block
//	content_block_delta: index, delta (text_delta, thinking_delta,
//	                     signature_delta, input_json_delta)
//	content_block_stop:  index
//	message_delta:       delta (stop_reason), usage
//	message_stop:        nothing
type streamEvent struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message"`
	Index        int64         `json:"index"`
	ContentBlock responseBlock `json:"content_block"`
	Delta        eventDelta    `json:"delta"`
	Usage        *deltaUsage   `json:"usage"`
}

// eventDelta is the delta of content_block_delta and of message_delta.
type eventDelta struct {
	Type        string  `json:"type"`
	Text        string  `json:"text"`
	Thinking    string  `json:"thinking"`
	Signature   string  `json:"signature"`
	PartialJSON string  `json:"partial_json"`
	StopReason  *string `json:"stop_reason"` // message_delta; nil when absent or null
}

// apiError is an error the API sent: as the body of a response whose
// status is 400 or more, or as the data of a stream's error event (status
// 0). Its body is {"type":"error","error":{"type":…,"message":…}}; what
// cannot be read of it is left empty, and the error is classified by its
// status and shown by its raw body.
type apiError struct {
	StatusCode int
	Type       string // error.type: "rate_limit_error", …; "" when absent
	Message    string // error.message; "" when absent
	Raw        string // the body as it came
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = snippet(e.Raw)
	}
	if e.Type != "" {
		return e.Type + ": " + msg
	}
	return msg
}

// parseAPIError reads an error body leniently: a body that is not JSON, or
// whose fields have other shapes, still makes an error, with what could be
// read.
func parseAPIError(status int, body []byte) *apiError {
	e := &apiError{StatusCode: status, Raw: strings.TrimSuffix(string(body), "\n")}
	var outer struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &outer) != nil {
		return e
	}
	var inner struct {
		Type    json.RawMessage `json:"type"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(outer.Error, &inner) != nil {
		return e
	}
	_ = json.Unmarshal(inner.Type, &e.Type)
	_ = json.Unmarshal(inner.Message, &e.Message)
	return e
}
