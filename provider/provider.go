package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role of a message in the conversation.
type Role string

const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	ToolRole  Role = "tool"
)

// Message is one conversation entry.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool
	Name       string     `json:"name,omitempty"`         // tool: the tool's name
	// Thinking is the assistant's extended thinking that a provider needs
	// back, unchanged, on the next turn (Anthropic's thinking blocks with
	// their signatures). Other providers ignore it.
	Thinking []Thinking `json:"thinking,omitempty"`
}

// Thinking is one block of a model's extended thinking, kept whole so it
// can be sent back as the provider requires: Text with the Signature that
// proves it, or Redacted, an encrypted block the provider shows no text of.
// It is never shown as the answer.
type Thinking struct {
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// ToolCall is a call the model asks for. Arguments is the raw JSON text the
// model produced (it may be invalid JSON; the engine validates it).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Request is one model call.
type Request struct {
	Model           string     `json:"model"`
	Messages        []Message  `json:"messages"`
	Tools           []ToolSpec `json:"tools,omitempty"`
	ToolChoice      string     `json:"tool_choice,omitempty"` // auto | required | none | a tool name
	Temperature     *float64   `json:"temperature,omitempty"`
	MaxOutputTokens int        `json:"max_output_tokens,omitempty"`
	JSON            bool       `json:"json,omitempty"` // ask for a JSON object answer
}

// Usage is what the provider reported for one call.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of PromptTokens
	// read from and written to the provider's prompt cache, which are
	// priced apart (plan.Pricing); 0 when the provider reported none.
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Response is one completed turn.
type Response struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reasoning is the reasoning text the provider sent with the turn (all
	// of its ReasoningDelta events); it is not part of the answer.
	Reasoning    string `json:"reasoning,omitempty"`
	Usage        Usage  `json:"usage"`
	UsageKnown   bool   `json:"usage_known"` // false when the provider reported none
	FinishReason string `json:"finish_reason,omitempty"`
	// ID and Model are the server's id of the turn and the model that
	// answered, as it reports them (for telemetry); "" when it sends none.
	ID    string `json:"id,omitempty"`
	Model string `json:"model,omitempty"`
	// FinishReasonMissing: the turn ended properly (a stream with its
	// [DONE], a whole plain answer) but carried no finish reason, as some
	// servers send it. The turn is complete; this only records the gap.
	FinishReasonMissing bool `json:"finish_reason_missing,omitempty"`
	// Thinking is the turn's extended thinking, to be kept on the
	// assistant message (Message.Thinking).
	Thinking []Thinking `json:"thinking,omitempty"`
}

// Event is a streamed piece of a turn, delivered as it arrives.
type Event struct {
	// ContentDelta is text to show now. Tool calls arrive whole in the Response.
	ContentDelta string
	// ReasoningDelta is reasoning text the provider chose to send
	// (reasoning_content, reasoning, or the text and summaries of
	// reasoning_details); it is not part of the answer, and symbi never
	// asks a model for hidden reasoning.
	ReasoningDelta string
	// ToolCallDelta is a piece of a tool call (its name or a fragment of
	// its arguments) as it arrives, there to be counted against the
	// budget while the call is in flight; the calls themselves arrive
	// whole in the Response.
	ToolCallDelta string
	// ToolCall is the same piece for display, with the call it belongs
	// to (a chunk with pieces of several calls is several events, the
	// later ones with ToolCall alone); nil when the event has none.
	ToolCall *ToolCallPiece
	// Started says the response's first event arrived (the first_event
	// timeout is met), whether or not it carries anything to show; a
	// provider sends it once per attempt, before the first piece.
	Started bool
}

// ToolCallPiece is a piece of one streamed tool call.
type ToolCallPiece struct {
	Index     int    // the call's place among the turn's tool calls, from 0
	ID        string // the call's id, in the piece that brings it
	Name      string // the tool's name, in the call's first piece
	Arguments string // a fragment of the arguments' JSON text
}

// Model is one configured model endpoint. Stream delivers content deltas to
// onEvent as they arrive and returns the assembled turn. A turn with neither
// text nor tool calls is an error of kind EmptyResponse. Implementations are
// safe for concurrent use.
type Model interface {
	Stream(ctx context.Context, req Request, onEvent func(Event)) (Response, error)
}

// WithQuiet marks a call whose streamed text nobody is to be shown (an
// answer a policy must allow first, an evaluation): a Model that shows the
// stream somewhere itself (a durable runtime's worker) keeps it back. The
// engine sets it; Quiet reads it.
func WithQuiet(ctx context.Context) context.Context {
	return context.WithValue(ctx, quietKey{}, true)
}

// Quiet reports whether ctx carries WithQuiet.
func Quiet(ctx context.Context) bool {
	q, _ := ctx.Value(quietKey{}).(bool)
	return q
}

type quietKey struct{}

// ErrorKind classifies a provider failure.
type ErrorKind string

const (
	MissingAPIKey        ErrorKind = "missing_api_key"
	AuthenticationFailed ErrorKind = "authentication_failed"
	RateLimited          ErrorKind = "rate_limited"
	ModelUnavailable     ErrorKind = "model_unavailable"
	TransportFailed      ErrorKind = "transport_failed"
	Refusal              ErrorKind = "refusal"
	Timeout              ErrorKind = "timeout" // one of the four stream timeouts; Error.Detail says which
	MalformedResponse    ErrorKind = "malformed_response"
	EmptyResponse        ErrorKind = "empty_response"
	InvalidRequest       ErrorKind = "invalid_request"
	// ResponseTooLarge: one response passed the model's max_response_bytes
	// (content, reasoning and tool calls together), or one line of its
	// stream, or its body, was longer than such a response could need.
	ResponseTooLarge ErrorKind = "response_too_large"
)

// Error is a typed provider failure. Test the kind with errors.As or Is.
type Error struct {
	Kind       ErrorKind
	Detail     string        // e.g. "first_event" for a Timeout
	StatusCode int           // HTTP status, when there was one
	RetryAfter time.Duration // from a 429's Retry-After header
	Err        error
}

func (e *Error) Error() string {
	msg := string(e.Kind)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.StatusCode)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error of the same kind, so errors.Is(err,
// &provider.Error{Kind: provider.RateLimited}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && (t.Detail == "" || t.Detail == e.Detail)
}

// KindOf returns the kind of a provider error, or "" when err is not one.
func KindOf(err error) ErrorKind {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return ""
}
