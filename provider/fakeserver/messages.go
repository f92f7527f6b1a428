package fakeserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/stdlib"
)

// The Anthropic Messages API (POST /v1/messages), served from the same
// replies as Chat Completions: a reply's content becomes a text block, its
// reasoning a thinking block (signed, so that a client which sends it back
// changed is refused as Anthropic refuses it), its tool calls tool_use
// blocks whose input arrives as input_json_delta pieces, its refusal a text
// block with stop_reason "refusal". Requests are checked against the rules
// the real API enforces (alternating roles, tool results answering the
// previous turn's tool_use ids and coming first, thinking blocks returned
// unchanged, max_tokens present, the thinking budget below it), and a
// request that breaks one is answered 400 invalid_request_error, naming the
// rule.

// MessagesRequest is a Messages API request as the server decoded it.
type MessagesRequest struct {
	Model        string                `json:"model"`
	MaxTokens    int64                 `json:"max_tokens"`
	System       Blocks                `json:"system"`
	Messages     []MessagesMessage     `json:"messages"`
	Tools        []MessagesTool        `json:"tools"`
	ToolChoice   *MessagesToolChoice   `json:"tool_choice"`
	Thinking     *MessagesThinking     `json:"thinking"`
	CacheControl *MessagesCacheControl `json:"cache_control"`
	Temperature  *float64              `json:"temperature"`
	Stream       bool                  `json:"stream"`
}

// MessagesMessage is one message of a Messages API request.
type MessagesMessage struct {
	Role    string `json:"role"`
	Content Blocks `json:"content"`
}

// Blocks is a list of content blocks; a bare string decodes as one text
// block, as the API reads it.
type Blocks []Block

func (b *Blocks) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		*b = Blocks{{Type: "text", Text: s}}
		return nil
	}
	var list []Block
	if err := json.Unmarshal(data, &list); err != nil {
		return err
	}
	*b = list
	return nil
}

// Block is one content block of a request.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   Blocks          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
}

// MessagesTool is a tool the request offers.
type MessagesTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// MessagesToolChoice is the request's tool_choice.
type MessagesToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// MessagesThinking is the request's thinking setting.
type MessagesThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens,omitempty"`
}

// MessagesCacheControl is the request's top-level cache_control.
type MessagesCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// ThinkingSignature is the signature the server gives a thinking block's
// text, and expects back with it.
func ThinkingSignature(text string) string {
	sum := sha256.Sum256([]byte("fakeserver thinking\x00" + text))
	return "sig_" + hex.EncodeToString(sum[:12])
}

var (
	toolNameRE  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
	toolUseIDRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// check applies the rules the real API enforces on a request; the error
// says which one a request breaks.
func (r *MessagesRequest) check() error {
	if r.MaxTokens < 1 {
		return errors.New("max_tokens: field required, at least 1")
	}
	if len(r.Messages) == 0 {
		return errors.New("messages: at least one message is required")
	}
	for i, b := range r.System {
		if b.Type != "text" || b.Text == "" {
			return fmt.Errorf("system.%d: system blocks must be non-empty text", i)
		}
	}
	tools := map[string]bool{}
	for i, t := range r.Tools {
		if !toolNameRE.MatchString(t.Name) {
			return fmt.Errorf("tools.%d.name: %q does not match %s", i, t.Name, toolNameRE)
		}
		if tools[t.Name] {
			return fmt.Errorf("tools.%d.name: tool names must be unique, %q is repeated", i, t.Name)
		}
		tools[t.Name] = true
		var schema struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			return fmt.Errorf("tools.%d.input_schema: must be a JSON schema of type object", i)
		}
	}
	thinking := r.Thinking != nil && r.Thinking.Type != "disabled"
	if r.Thinking != nil {
		switch r.Thinking.Type {
		case "enabled":
			if r.Thinking.BudgetTokens < 1024 || r.Thinking.BudgetTokens >= r.MaxTokens {
				return fmt.Errorf("thinking.budget_tokens: must be at least 1024 and less than max_tokens (%d), not %d", r.MaxTokens, r.Thinking.BudgetTokens)
			}
		case "adaptive", "disabled":
		default:
			return fmt.Errorf("thinking.type: %q is not enabled, adaptive or disabled", r.Thinking.Type)
		}
	}
	if tc := r.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "none":
		case "any", "tool":
			if thinking {
				return errors.New("tool_choice: thinking may not be enabled when tool_choice forces tool use")
			}
			if tc.Type == "tool" && !tools[tc.Name] {
				return fmt.Errorf("tool_choice.name: %q is not one of the request's tools", tc.Name)
			}
		default:
			return fmt.Errorf("tool_choice.type: %q is not auto, any, tool or none", tc.Type)
		}
	}
	var pending []string // tool_use ids the previous assistant turn left open
	lastToolTurn := -1
	for i, m := range r.Messages {
		switch {
		case m.Role != "user" && m.Role != "assistant":
			return fmt.Errorf("messages.%d.role: %q is not user or assistant", i, m.Role)
		case i == 0 && m.Role != "user":
			return errors.New("messages.0.role: the first message must use the user role")
		case i > 0 && r.Messages[i-1].Role == m.Role:
			return fmt.Errorf("messages.%d: roles must alternate between user and assistant, and messages.%d is %s too", i, i-1, m.Role)
		case len(m.Content) == 0:
			return fmt.Errorf("messages.%d.content: must not be empty", i)
		}
		if m.Role == "user" {
			answered := map[string]bool{}
			others := false
			for j, b := range m.Content {
				path := fmt.Sprintf("messages.%d.content.%d", i, j)
				switch b.Type {
				case "text":
					if b.Text == "" {
						return fmt.Errorf("%s: text content blocks must be non-empty", path)
					}
					others = true
				case "tool_result":
					if others {
						return fmt.Errorf("%s: tool_result blocks must come first in the content, before any other block", path)
					}
					if !contains(pending, b.ToolUseID) {
						return fmt.Errorf("%s: unexpected tool_use_id %q: each tool_result must answer a tool_use of the previous assistant message", path, b.ToolUseID)
					}
					answered[b.ToolUseID] = true
				default:
					return fmt.Errorf("%s: block type %q is not allowed in a user message here", path, b.Type)
				}
			}
			for _, id := range pending {
				if !answered[id] {
					return fmt.Errorf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, id)
				}
			}
			pending = nil
			continue
		}
		for j, b := range m.Content {
			path := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if b.Text == "" {
					return fmt.Errorf("%s: text content blocks must be non-empty", path)
				}
			case "thinking":
				if b.Signature != ThinkingSignature(b.Thinking) {
					return fmt.Errorf("%s: invalid signature in thinking block: thinking blocks must be sent back unmodified", path)
				}
			case "redacted_thinking":
				if b.Data == "" {
					return fmt.Errorf("%s: redacted_thinking needs its data", path)
				}
			case "tool_use":
				var input map[string]any
				switch {
				case !toolUseIDRE.MatchString(b.ID):
					return fmt.Errorf("%s.id: %q does not match %s", path, b.ID, toolUseIDRE)
				case contains(pending, b.ID):
					return fmt.Errorf("%s.id: tool_use ids must be unique, %q is repeated", path, b.ID)
				case json.Unmarshal(b.Input, &input) != nil || input == nil:
					return fmt.Errorf("%s.input: must be a JSON object", path)
				}
				pending = append(pending, b.ID)
				lastToolTurn = i
			default:
				return fmt.Errorf("%s: block type %q is not allowed in an assistant message", path, b.Type)
			}
		}
	}
	if thinking && lastToolTurn >= 0 {
		if first := r.Messages[lastToolTurn].Content[0].Type; first != "thinking" && first != "redacted_thinking" {
			return fmt.Errorf("messages.%d.content.0.type: expected `thinking` or `redacted_thinking`, but found `%s`: when thinking is enabled, a final assistant message with tool use must start with a thinking block", lastToolTurn, first)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// messagesUsage is Anthropic's usage object: input_tokens counts what the
// cache did not supply.
type messagesUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// anthropicUsage is what a reply reports: Reply.Usage as given, else an
// estimate over the request and the answer like the Chat Completions one.
func (r Reply) anthropicUsage(req *MessagesRequest) messagesUsage {
	if u := r.Usage; u != nil {
		return messagesUsage{
			InputTokens:              max(u.PromptTokens-u.CacheReadTokens-u.CacheWriteTokens, 0),
			CacheCreationInputTokens: u.CacheWriteTokens,
			CacheReadInputTokens:     u.CacheReadTokens,
			OutputTokens:             u.CompletionTokens,
		}
	}
	var prompt int64
	for _, b := range req.System {
		prompt += int64(stdlib.EstimateTokens(b.Text))
	}
	for _, m := range req.Messages {
		prompt += blocksTokens(m.Content)
	}
	completion := int64(stdlib.EstimateTokens(r.content()) + stdlib.EstimateTokens(r.Refusal) + stdlib.EstimateTokens(r.Reasoning))
	for _, c := range r.ToolCalls {
		completion += int64(stdlib.EstimateTokens(c.Name) + stdlib.EstimateTokens(c.Arguments))
	}
	return messagesUsage{InputTokens: prompt, OutputTokens: completion}
}

func blocksTokens(blocks Blocks) int64 {
	var n int64
	for _, b := range blocks {
		n += int64(stdlib.EstimateTokens(b.Text) + stdlib.EstimateTokens(b.Name) + stdlib.EstimateTokens(string(b.Input)) + stdlib.EstimateTokens(b.Thinking))
		n += blocksTokens(b.Content)
	}
	return n
}

// stopReason is the reply's finish reason as Anthropic names it: the Chat
// Completions names are translated, any other is sent as it is.
func (r Reply) stopReason() string {
	switch f := r.finishReason(); f {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	default:
		return f
	}
}

func (r Reply) toolUseID(i int) string {
	if id := r.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("toolu_fake_%d", i)
}

// The wire format of a response, written out as the API sends it.
type responseBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
}

type messageJSONBody struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []responseBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        *messagesUsage  `json:"usage,omitempty"`
}

func ptr(s string) *string { return &s }

// blocks is the reply's content as whole blocks, in the order a stream
// sends them: thinking, redacted thinking, text, refusal, tool uses.
func (r Reply) blocks() []responseBlock {
	var out []responseBlock
	if r.Reasoning != "" {
		out = append(out, responseBlock{Type: "thinking", Thinking: ptr(r.Reasoning), Signature: ptr(ThinkingSignature(r.Reasoning))})
	}
	if r.RedactedThinking != "" {
		out = append(out, responseBlock{Type: "redacted_thinking", Data: r.RedactedThinking})
	}
	if c := r.content(); c != "" {
		out = append(out, responseBlock{Type: "text", Text: ptr(c)})
	}
	if r.Refusal != "" {
		out = append(out, responseBlock{Type: "text", Text: ptr(r.Refusal)})
	}
	for i, tc := range r.ToolCalls {
		input := json.RawMessage(tc.Arguments)
		if strings.TrimSpace(tc.Arguments) == "" {
			input = json.RawMessage("{}")
		}
		out = append(out, responseBlock{Type: "tool_use", ID: r.toolUseID(i), Name: tc.Name, Input: input})
	}
	return out
}

func (r Reply) message(req *MessagesRequest) messageJSONBody {
	msg := messageJSONBody{
		ID: "msg_fake", Type: "message", Role: "assistant", Model: req.Model,
		Content: r.blocks(), StopReason: ptr(r.stopReason()),
	}
	if msg.Content == nil {
		msg.Content = []responseBlock{}
	}
	if !r.NoUsage {
		u := r.anthropicUsage(req)
		msg.Usage = &u
	}
	return msg
}

// sse is one server-sent event as the Messages API writes it.
func sse(typ string, v any) []byte {
	b, _ := json.Marshal(v)
	return []byte("event: " + typ + "\ndata: " + string(b) + "\n\n")
}

type obj = map[string]any

// messageEvents renders a reply as the Messages API's stream: message_start
// (with the prompt's usage), a ping, each block's start, deltas and stop,
// message_delta (stop_reason and output usage) and message_stop.
func (r Reply) messageEvents(req *MessagesRequest) [][]byte {
	start := r.message(req)
	start.Content, start.StopReason = []responseBlock{}, nil
	// message_delta's counts are the message's totals (the API sends
	// every one it knows there); message_start's output is a placeholder.
	var final *messagesUsage
	if start.Usage != nil {
		u := *start.Usage
		final = &u
		start.Usage = &messagesUsage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: min(u.OutputTokens, 1)}
	}
	events := [][]byte{sse("message_start", obj{"type": "message_start", "message": start}), sse("ping", obj{"type": "ping"})}
	index := 0
	block := func(cb responseBlock, deltas []obj) {
		events = append(events, sse("content_block_start", obj{"type": "content_block_start", "index": index, "content_block": cb}))
		for _, d := range deltas {
			events = append(events, sse("content_block_delta", obj{"type": "content_block_delta", "index": index, "delta": d}))
		}
		events = append(events, sse("content_block_stop", obj{"type": "content_block_stop", "index": index}))
		index++
	}
	if r.Reasoning != "" {
		var deltas []obj
		for _, p := range split(r.Reasoning, 2) {
			deltas = append(deltas, obj{"type": "thinking_delta", "thinking": p})
		}
		deltas = append(deltas, obj{"type": "signature_delta", "signature": ThinkingSignature(r.Reasoning)})
		block(responseBlock{Type: "thinking", Thinking: ptr(""), Signature: ptr("")}, deltas)
	}
	if r.RedactedThinking != "" {
		block(responseBlock{Type: "redacted_thinking", Data: r.RedactedThinking}, nil)
	}
	chunks := r.Chunks
	if len(chunks) == 0 && r.Content != "" {
		chunks = []string{r.Content}
	}
	if r.Refusal != "" {
		chunks = append(chunks, r.Refusal)
	}
	if len(chunks) > 0 {
		var deltas []obj
		for _, c := range chunks {
			deltas = append(deltas, obj{"type": "text_delta", "text": c})
		}
		block(responseBlock{Type: "text", Text: ptr("")}, deltas)
	}
	for i, tc := range r.ToolCalls {
		pieces := tc.ArgumentChunks
		if len(pieces) == 0 {
			pieces = split(tc.Arguments, 3)
		}
		var deltas []obj
		for _, p := range pieces {
			deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": p})
		}
		block(responseBlock{Type: "tool_use", ID: r.toolUseID(i), Name: tc.Name, Input: json.RawMessage("{}")}, deltas)
	}
	delta := obj{"type": "message_delta", "delta": obj{"stop_reason": r.stopReason(), "stop_sequence": nil}}
	if final != nil {
		delta["usage"] = final
	}
	events = append(events, sse("message_delta", delta))
	return append(events, sse("message_stop", obj{"type": "message_stop"}))
}

// anthropicErrorType is the error type an error reply carries: ErrorType,
// else an ErrorCode that is one of Anthropic's types, else the one its
// status has at Anthropic.
func (r Reply) anthropicErrorType(status int) string {
	switch {
	case r.ErrorType != "":
		return r.ErrorType
	case strings.HasSuffix(r.ErrorCode, "_error"):
		return r.ErrorCode
	}
	return errorTypeOfStatus(status)
}

func errorTypeOfStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// statusOfErrorType is the status Anthropic answers an error type with.
func statusOfErrorType(typ string) int {
	for _, status := range []int{400, 401, 402, 403, 404, 413, 429, 504, 529} {
		if errorTypeOfStatus(status) == typ {
			return status
		}
	}
	return http.StatusInternalServerError
}

func anthropicErrorBody(typ, message string) obj {
	return obj{"type": "error", "error": obj{"type": typ, "message": message}, "request_id": "req_fake"}
}

// writeAnthropicError sends an Anthropic error body.
func writeAnthropicError(w http.ResponseWriter, status int, typ, message string) {
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(status)
	body, _ := json.Marshal(anthropicErrorBody(typ, message))
	w.Write(body)
}

// decodeMessages decodes and checks a Messages API request body.
func decodeMessages(body []byte) (MessagesRequest, error) {
	var req MessagesRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("fakeserver: request body is not a messages request: %w", err)
	}
	return req, req.check()
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := Request{Path: r.URL.Path, RemoteAddr: r.RemoteAddr, Header: r.Header.Clone(), Body: body}
	var checkErr error
	req.Anthropic, checkErr = decodeMessages(body)
	reply, ok := s.take(req, checkErr == nil)
	switch {
	case checkErr != nil:
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", checkErr.Error())
		return
	case !ok:
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", reply.ErrorMessage)
		return
	}
	if !s.wait(r, s.latencyOf(reply)) {
		return
	}
	s.respondMessages(w, r, reply, &req.Anthropic)
}

func (s *Server) respondMessages(w http.ResponseWriter, r *http.Request, reply Reply, req *MessagesRequest) {
	switch reply.Fault {
	case FaultRateLimit:
		if reply.RetryAfterHeader != "" {
			w.Header().Set("Retry-After", reply.RetryAfterHeader)
		} else if reply.RetryAfter > 0 {
			secs := (reply.RetryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
		}
		writeAnthropicError(w, http.StatusTooManyRequests, reply.anthropicErrorType(http.StatusTooManyRequests), orDefault(reply.ErrorMessage, "Number of request tokens has exceeded your per-minute rate limit"))
		return
	case FaultServerError:
		writeAnthropicError(w, http.StatusInternalServerError, reply.anthropicErrorType(http.StatusInternalServerError), orDefault(reply.ErrorMessage, "Internal server error"))
		return
	case FaultStatus:
		writeAnthropicError(w, reply.Status, reply.anthropicErrorType(reply.Status), reply.ErrorMessage)
		return
	case FaultErrorInStream:
		if !req.Stream {
			typ := reply.anthropicErrorType(529)
			writeAnthropicError(w, statusOfErrorType(typ), typ, orDefault(reply.ErrorMessage, "Overloaded"))
			return
		}
	case FaultReset:
		reset(w)
		return
	}
	switch {
	case reply.Flood != nil:
		s.floodMessages(w, r, reply, req)
	case !req.Stream:
		s.respondMessagePlain(w, r, reply, req)
	default:
		s.respondMessageStream(w, r, reply, req)
	}
}

func (s *Server) respondMessagePlain(w http.ResponseWriter, r *http.Request, reply Reply, req *MessagesRequest) {
	switch reply.Fault {
	case FaultStallBeforeFirstEvent, FaultStallMidStream:
		if !s.stall(r, reply.StallFor) {
			return
		}
	case FaultMalformedJSON:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_fake","type":"message","role":"assistant","content":[{"type":"text","text":not json}]}`)
		return
	}
	body, _ := json.Marshal(reply.message(req))
	if reply.Fault == FaultTruncated {
		truncate(w, "application/json", body[:len(body)/2], len(body))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (s *Server) respondMessageStream(w http.ResponseWriter, r *http.Request, reply Reply, req *MessagesRequest) {
	events := reply.messageEvents(req)
	faultAt := len(events)
	switch reply.Fault {
	case FaultStallBeforeFirstEvent:
		faultAt = 0
	case FaultStallMidStream, FaultMalformedJSON, FaultTruncated, FaultErrorInStream:
		faultAt = min(max(reply.EventsBeforeFault, 1), len(events))
	}
	if reply.Fault == FaultTruncated {
		var buf bytes.Buffer
		for _, e := range events[:faultAt] {
			buf.Write(e)
		}
		// Half of the next event, then the connection closes: a stream cut
		// off mid-event, with no message_stop.
		buf.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lost")
		truncate(w, "text/event-stream", buf.Bytes(), buf.Len()+4096)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	for i, e := range events {
		if i == faultAt {
			switch reply.Fault {
			case FaultStallBeforeFirstEvent, FaultStallMidStream:
				if !s.stall(r, reply.StallFor) {
					return
				}
			case FaultMalformedJSON:
				io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"oops\"\n\n")
				flush()
				return
			case FaultErrorInStream:
				w.Write(sse("error", anthropicErrorBody(reply.anthropicErrorType(529), orDefault(reply.ErrorMessage, "Overloaded"))))
				flush()
				return
			}
		}
		if reply.ChunkDelay > 0 && i > 0 && !s.wait(r, reply.ChunkDelay) {
			return
		}
		if _, err := w.Write(e); err != nil {
			return
		}
		flush()
	}
	if reply.EndDelay > 0 {
		s.wait(r, reply.EndDelay)
	}
}

// floodMessages sends a flood in the Messages API's format: text_delta or
// input_json_delta events of Chunk bytes, one event holding all of it
// (OneLine), or one plain body; the text is never held whole.
func (s *Server) floodMessages(w http.ResponseWriter, r *http.Request, reply Reply, req *MessagesRequest) {
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
	flusher, _ := w.(http.Flusher)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil || !live() {
			return false
		}
		if flusher != nil && req.Stream {
			flusher.Flush()
		}
		return true
	}
	f := *reply.Flood
	text := newFloodText(f)
	id, name := reply.floodCall()
	stop := "end_turn"
	if f.Arguments {
		stop = "tool_use"
	}
	usage := func() messagesUsage {
		u := Reply{NoUsage: reply.NoUsage, Usage: reply.Usage}.anthropicUsage(req)
		if reply.Usage == nil {
			u.OutputTokens = (text.sent + 3) / 4
		}
		return u
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		head := `{"id":"msg_fake","type":"message","role":"assistant","model":` + jsonString(req.Model) + `,"content":[{"type":"text","text":"`
		tail := `"}]`
		if f.Arguments {
			head = `{"id":"msg_fake","type":"message","role":"assistant","model":` + jsonString(req.Model) + `,"content":[{"type":"tool_use","id":` + jsonString(id) + `,"name":` + jsonString(name) + `,"input":`
			tail = `}]`
		}
		if !write([]byte(head)) {
			return
		}
		for p := text.next(floodWrite); p != ""; p = text.next(floodWrite) {
			if f.Arguments {
				// The input is the JSON object itself, not a string.
				if !write([]byte(p)) {
					return
				}
			} else if !write([]byte(jsonText(p))) {
				return
			}
		}
		tail += `,"stop_reason":"` + stop + `","stop_sequence":null`
		if !reply.NoUsage {
			u, _ := json.Marshal(usage())
			tail += `,"usage":` + string(u)
		}
		write([]byte(tail + "}"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	start := messageJSONBody{ID: "msg_fake", Type: "message", Role: "assistant", Model: req.Model, Content: []responseBlock{}}
	if !reply.NoUsage {
		u := usage()
		u.OutputTokens = 1
		start.Usage = &u
	}
	if !write(sse("message_start", obj{"type": "message_start", "message": start})) {
		return
	}
	cb := responseBlock{Type: "text", Text: ptr("")}
	deltaType, field := "text_delta", "text"
	if f.Arguments {
		cb = responseBlock{Type: "tool_use", ID: id, Name: name, Input: json.RawMessage("{}")}
		deltaType, field = "input_json_delta", "partial_json"
	}
	if !write(sse("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": cb})) {
		return
	}
	if f.OneLine {
		head := `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"` + deltaType + `","` + field + `":"`
		if !write([]byte(head)) {
			return
		}
		for p := text.next(floodWrite); p != ""; p = text.next(floodWrite) {
			if !write([]byte(jsonText(p))) {
				return
			}
		}
		if !write([]byte(`"}}` + "\n\n")) {
			return
		}
	} else {
		size := f.Chunk
		if size <= 0 {
			size = 1024
		}
		for p := text.next(size); p != ""; p = text.next(size) {
			if !write(sse("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": deltaType, field: p}})) {
				return
			}
		}
	}
	if !write(sse("content_block_stop", obj{"type": "content_block_stop", "index": 0})) {
		return
	}
	delta := obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}}
	if !reply.NoUsage {
		delta["usage"] = obj{"output_tokens": usage().OutputTokens}
	}
	if !write(sse("message_delta", delta)) {
		return
	}
	write(sse("message_stop", obj{"type": "message_stop"}))
}
