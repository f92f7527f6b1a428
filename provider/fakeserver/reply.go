package fakeserver

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

// Fault is a failure the server injects instead of, or in the middle of, a
// normal answer.
type Fault int

const (
	NoFault Fault = iota
	// FaultRateLimit answers 429 with Retry-After (Reply.RetryAfter, in whole
	// seconds rounded up, or Reply.RetryAfterHeader verbatim).
	FaultRateLimit
	// FaultServerError answers 500.
	FaultServerError
	// FaultStatus answers Reply.Status with an OpenAI error body carrying
	// Reply.ErrorCode and Reply.ErrorMessage (401, 403, 404 model_not_found…).
	FaultStatus
	// FaultReset closes the connection with a TCP reset before any response.
	FaultReset
	// FaultStallBeforeFirstEvent sends the stream's headers and then nothing
	// until the client gives up (or for Reply.StallFor). A plain answer stalls
	// before its headers.
	FaultStallBeforeFirstEvent
	// FaultStallMidStream sends Reply.EventsBeforeFault events (at least 1),
	// then nothing until the client gives up (or for Reply.StallFor).
	FaultStallMidStream
	// FaultMalformedJSON sends an event whose data is not JSON after
	// EventsBeforeFault events; a plain answer's body is not JSON.
	FaultMalformedJSON
	// FaultTruncated sends EventsBeforeFault events and half of the next one,
	// then closes the connection before the promised length and without
	// [DONE]; a plain answer's body is cut in half.
	FaultTruncated
	// FaultErrorInStream answers 200, sends EventsBeforeFault events, then
	// an error as an event of its own, data: {"error":{…}}, as OpenAI, vLLM
	// and LiteLLM do once a stream has begun (or, with ErrorInChunk, inside
	// a chunk whose finish_reason is "error", as OpenRouter does), and ends
	// the stream without [DONE]. The error carries ErrorMessage, ErrorType
	// and ErrorCode (null when empty), or ErrorNumericCode as a number. A
	// plain answer is that error object as a 200 response's body. The
	// Messages API gets Anthropic's "event: error" with
	// {"type":"error","error":{"type":ErrorType,…}} (its plain answer: the
	// error as a response, with the status its type has).
	FaultErrorInStream
)

func (f Fault) String() string {
	switch f {
	case NoFault:
		return "none"
	case FaultRateLimit:
		return "rate_limit"
	case FaultServerError:
		return "server_error"
	case FaultStatus:
		return "status"
	case FaultReset:
		return "reset"
	case FaultStallBeforeFirstEvent:
		return "stall_before_first_event"
	case FaultStallMidStream:
		return "stall_mid_stream"
	case FaultMalformedJSON:
		return "malformed_json"
	case FaultTruncated:
		return "truncated"
	case FaultErrorInStream:
		return "error_in_stream"
	}
	return "unknown"
}

// ToolCall is a tool call the fake model makes. Streamed, its arguments are
// split across events: ArgumentChunks when set, else three pieces.
type ToolCall struct {
	ID             string
	Name           string
	Arguments      string
	ArgumentChunks []string
}

// Reply is one scripted answer.
type Reply struct {
	Content   string
	Chunks    []string // content deltas; when empty, Content is sent as one delta
	ToolCalls []ToolCall
	Refusal   string // sent as the message's refusal
	// Reasoning is sent before the content, in ReasoningChunks when set
	// (streamed), under the name ReasoningAs says; the Messages API sends it
	// as a signed thinking block.
	Reasoning       string
	ReasoningChunks []string
	ReasoningAs     ReasoningField
	// RedactedThinking is sent as a redacted_thinking block's data in the
	// Messages API (Chat Completions has no such thing).
	RedactedThinking string

	// FinishReason defaults to "tool_calls" with tool calls, "content_filter"
	// with a refusal, else "stop".
	FinishReason string
	// NoFinishReason leaves the finish reason null, as some servers do: the
	// stream still ends with [DONE].
	NoFinishReason bool
	// Usage is reported as given; nil reports an estimate over the request
	// and the answer, unless NoUsage.
	Usage   *provider.Usage
	NoUsage bool

	// Flood, when set, makes the answer a flood of content or of one tool
	// call's arguments, generated as it is sent (see Flood).
	Flood *Flood

	// Latency is waited before the response starts (default: WithLatency).
	Latency time.Duration
	// ChunkDelay is waited between streamed events.
	ChunkDelay time.Duration
	// EndDelay is waited after the last streamed event ([DONE]) before the
	// response ends, as a server (or proxy) does whose chunked terminator
	// arrives a moment after the last event.
	EndDelay time.Duration

	Fault            Fault
	RetryAfter       time.Duration // FaultRateLimit
	RetryAfterHeader string        // FaultRateLimit: the header verbatim, e.g. an HTTP date
	Status           int           // FaultStatus
	ErrorCode        string        // FaultStatus, FaultErrorInStream
	// ErrorType is the error's type (error.type), FaultStatus and
	// FaultErrorInStream: for the Messages API the default is an ErrorCode
	// ending in _error, else the type Anthropic gives the status; for Chat
	// Completions, the type its status has.
	ErrorType         string
	ErrorNumericCode  int           // FaultErrorInStream: the code as a number (vLLM, OpenRouter)
	ErrorInChunk      bool          // FaultErrorInStream: inside a chunk, as OpenRouter sends it
	ErrorMessage      string        // FaultStatus, FaultRateLimit, FaultServerError, FaultErrorInStream
	StallFor          time.Duration // stalls: 0 = until the client gives up
	EventsBeforeFault int           // mid-stream faults: events sent first (default 1)
}

// ReasoningField is the name a reply's reasoning is sent under.
type ReasoningField int

const (
	// ReasoningContent: "reasoning_content" (DeepSeek, llama.cpp, vLLM
	// before it renamed the field).
	ReasoningContent ReasoningField = iota
	// ReasoningText: "reasoning" (vLLM, Ollama).
	ReasoningText
	// ReasoningDetails: "reasoning" and, with the same text,
	// "reasoning_details" entries of type reasoning.text, as OpenRouter
	// sends both.
	ReasoningDetails
	// ReasoningSummary: "reasoning_details" entries of type
	// reasoning.summary only: OpenAI's reasoning summaries as OpenRouter
	// passes them on.
	ReasoningSummary
)

// reasoning sets text on m under the field r names.
func (r ReasoningField) set(m *reasoningJSON, text string) {
	if text == "" {
		return
	}
	switch r {
	case ReasoningText:
		m.Reasoning = text
	case ReasoningDetails:
		m.Reasoning = text
		m.Details = []reasoningDetailJSON{{Type: "reasoning.text", Text: text, Format: "unknown"}}
	case ReasoningSummary:
		m.Details = []reasoningDetailJSON{{Type: "reasoning.summary", Summary: text, Format: "openai-responses-v1"}}
	default:
		m.ReasoningContent = text
	}
}

// ErrorReply answers status with an OpenAI error body, e.g.
// ErrorReply(404, "model_not_found", "The model does not exist").
func ErrorReply(status int, code, message string) Reply {
	return Reply{Fault: FaultStatus, Status: status, ErrorCode: code, ErrorMessage: message}
}

// Text is a reply with content split into the given chunks.
func Text(chunks ...string) Reply {
	return Reply{Chunks: chunks}
}

func (r Reply) content() string {
	if len(r.Chunks) == 0 {
		return r.Content
	}
	s := ""
	for _, c := range r.Chunks {
		s += c
	}
	return s
}

func (r Reply) reasoning() string {
	if len(r.ReasoningChunks) == 0 {
		return r.Reasoning
	}
	s := ""
	for _, c := range r.ReasoningChunks {
		s += c
	}
	return s
}

func (r Reply) finishReason() string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	case r.Refusal != "":
		return "content_filter"
	}
	return "stop"
}

func (r Reply) usage(chat openai.ChatCompletionRequest) usageJSON {
	if r.Usage != nil {
		return usageJSON{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens, TotalTokens: r.Usage.TotalTokens}
	}
	var prompt, completion int64
	for _, m := range chat.Messages {
		prompt += int64(stdlib.EstimateTokens(m.Content))
		for _, c := range m.ToolCalls {
			prompt += int64(stdlib.EstimateTokens(c.Function.Name) + stdlib.EstimateTokens(c.Function.Arguments))
		}
	}
	completion = int64(stdlib.EstimateTokens(r.content()) + stdlib.EstimateTokens(r.reasoning()) + stdlib.EstimateTokens(r.Refusal))
	for _, c := range r.ToolCalls {
		completion += int64(stdlib.EstimateTokens(c.Name) + stdlib.EstimateTokens(c.Arguments))
	}
	return usageJSON{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// The wire format, written out rather than borrowed from go-openai so that
// what the server sends is exactly what OpenAI sends (null finish reasons,
// no empty "type" on continuation deltas).
type usageJSON struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type functionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type toolCallJSON struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionJSON `json:"function"`
}

type reasoningJSON struct {
	ReasoningContent string                `json:"reasoning_content,omitempty"`
	Reasoning        string                `json:"reasoning,omitempty"`
	Details          []reasoningDetailJSON `json:"reasoning_details,omitempty"`
}

type reasoningDetailJSON struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Summary string `json:"summary,omitempty"`
	Format  string `json:"format,omitempty"`
	Index   int    `json:"index"`
}

type messageJSON struct {
	Role string `json:"role"`
	reasoningJSON
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []toolCallJSON `json:"tool_calls,omitempty"`
}

type choiceJSON struct {
	Index        int          `json:"index"`
	Message      *messageJSON `json:"message,omitempty"`
	Delta        *deltaJSON   `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
}

type deltaJSON struct {
	Role string `json:"role,omitempty"`
	reasoningJSON
	Content   *string        `json:"content,omitempty"`
	Refusal   *string        `json:"refusal,omitempty"`
	ToolCalls []toolCallJSON `json:"tool_calls,omitempty"`
}

type completionJSON struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Error   *errorJSON   `json:"error,omitempty"` // OpenRouter's error inside a chunk
	Choices []choiceJSON `json:"choices"`
	Usage   *usageJSON   `json:"usage,omitempty"`
}

// errorJSON is an OpenAI error object. Code is a string, a number or null.
type errorJSON struct {
	Message string  `json:"message"`
	Type    string  `json:"type,omitempty"`
	Param   *string `json:"param"`
	Code    any     `json:"code"`
}

// streamError is the error object FaultErrorInStream sends.
func (r Reply) streamError() *errorJSON {
	e := &errorJSON{Message: orDefault(r.ErrorMessage, "The server had an error while processing your request"), Type: r.ErrorType}
	switch {
	case r.ErrorNumericCode != 0:
		e.Code = r.ErrorNumericCode
	case r.ErrorCode != "":
		e.Code = r.ErrorCode
	}
	return e
}

const created = 1700000000

func completion(r Reply, chat openai.ChatCompletionRequest) completionJSON {
	msg := &messageJSON{Role: "assistant"}
	r.ReasoningAs.set(&msg.reasoningJSON, r.reasoning())
	if c := r.content(); c != "" || len(r.ToolCalls) == 0 {
		msg.Content = &c
	}
	if r.Refusal != "" {
		msg.Refusal = &r.Refusal
	}
	for _, tc := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, toolCallJSON{ID: tc.ID, Type: "function", Function: functionJSON{Name: tc.Name, Arguments: tc.Arguments}})
	}
	finish := r.finishReason()
	out := completionJSON{
		ID: "chatcmpl-fake", Object: "chat.completion", Created: created, Model: chat.Model,
		Choices: []choiceJSON{{Message: msg, FinishReason: &finish}},
	}
	if r.NoFinishReason {
		out.Choices[0].FinishReason = nil
	}
	if !r.NoUsage {
		u := r.usage(chat)
		out.Usage = &u
	}
	return out
}

// streamEvents renders a reply as SSE events, each "data: …\n\n", ending
// with [DONE].
func streamEvents(r Reply, chat openai.ChatCompletionRequest, includeUsage bool) [][]byte {
	var events [][]byte
	add := func(d *deltaJSON, finish *string) {
		events = append(events, event(completionJSON{
			ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: created, Model: chat.Model,
			Choices: []choiceJSON{{Delta: d, FinishReason: finish}},
		}))
	}
	empty := ""
	add(&deltaJSON{Role: "assistant", Content: &empty}, nil)
	reasoning := r.ReasoningChunks
	if len(reasoning) == 0 && r.Reasoning != "" {
		reasoning = []string{r.Reasoning}
	}
	for _, text := range reasoning {
		d := &deltaJSON{}
		r.ReasoningAs.set(&d.reasoningJSON, text)
		add(d, nil)
	}
	chunks := r.Chunks
	if len(chunks) == 0 && r.Content != "" {
		chunks = []string{r.Content}
	}
	for _, c := range chunks {
		add(&deltaJSON{Content: &c}, nil)
	}
	if r.Refusal != "" {
		add(&deltaJSON{Refusal: &r.Refusal}, nil)
	}
	for i, tc := range r.ToolCalls {
		pieces := tc.ArgumentChunks
		if len(pieces) == 0 {
			pieces = split(tc.Arguments, 3)
		}
		add(&deltaJSON{ToolCalls: []toolCallJSON{{Index: &i, ID: tc.ID, Type: "function", Function: functionJSON{Name: tc.Name}}}}, nil)
		for _, p := range pieces {
			add(&deltaJSON{ToolCalls: []toolCallJSON{{Index: &i, Function: functionJSON{Arguments: p}}}}, nil)
		}
	}
	finish := r.finishReason()
	if r.NoFinishReason {
		add(&deltaJSON{}, nil)
	} else {
		add(&deltaJSON{}, &finish)
	}
	if includeUsage && !r.NoUsage {
		u := r.usage(chat)
		events = append(events, event(completionJSON{
			ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: created, Model: chat.Model,
			Choices: []choiceJSON{}, Usage: &u,
		}))
	}
	return append(events, []byte("data: [DONE]\n\n"))
}

// errorEvent is the event FaultErrorInStream sends in place of the rest
// of the stream.
func errorEvent(r Reply, chat openai.ChatCompletionRequest) []byte {
	if r.ErrorInChunk {
		finish := "error"
		empty := ""
		return event(completionJSON{
			ID: "chatcmpl-fake", Object: "chat.completion.chunk", Created: created, Model: chat.Model,
			Error:   r.streamError(),
			Choices: []choiceJSON{{Delta: &deltaJSON{Content: &empty}, FinishReason: &finish}},
		})
	}
	return event(map[string]any{"error": r.streamError()})
}

func event(v any) []byte {
	b, _ := json.Marshal(v)
	return append(append([]byte("data: "), b...), '\n', '\n')
}

// split cuts s into about n pieces on rune boundaries, so every piece is
// valid UTF-8 on the wire.
func split(s string, n int) []string {
	if len(s) <= n {
		if s == "" {
			return nil
		}
		return []string{s}
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
