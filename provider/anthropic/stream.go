package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/provider"
)

// Stream makes one model call: up to Retry.MaxAttempts attempts, under the
// total timeout. Deltas reach onEvent as they arrive; once text or thinking
// has, the call is not retried, so the caller never sees it twice.
func (m *Model) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	params, err := m.messagesRequest(req)
	if err != nil {
		return provider.Response{}, err
	}
	body, err := json.Marshal(params)
	if err != nil {
		// A tool's schema that is not JSON, say.
		return provider.Response{}, m.typed(provider.InvalidRequest, "", 0, err)
	}
	if total := m.cfg.Timeouts.Total.Std(); total > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, total, errTotalTimeout)
		defer cancel()
	}
	if onEvent == nil {
		onEvent = func(provider.Event) {}
	}
	attempts := max(m.cfg.Retry.MaxAttempts, 1)
	for attempt := 1; ; attempt++ {
		warnIfThinkingDeprecated(params)
		resp, delivered, f := m.attempt(ctx, body, onEvent)
		if f.err == nil {
			return resp, nil
		}
		if !f.retryable || delivered || attempt >= attempts {
			return provider.Response{}, f.err
		}
		wait, ok := m.backoff(ctx, attempt, f.err)
		if !ok {
			return provider.Response{}, f.err
		}
		if err := m.cfg.Sleep(ctx, wait); err != nil {
			if ctx.Err() != nil {
				// Waiting ran into the total timeout or the caller's end.
				return provider.Response{}, m.classify(ctx, ctx, err, &exchange{}).err
			}
			return provider.Response{}, f.err
		}
	}
}

// backoff is the wait before attempt+1: the server's Retry-After when it
// gave one, else exponential backoff with jitter. It declines (false) when
// the wait would outlast max_backoff or the total timeout: better to report
// rate_limited now than to fail later with nothing gained.
func (m *Model) backoff(ctx context.Context, attempt int, err error) (time.Duration, bool) {
	r := m.cfg.Retry
	maxWait := r.MaxBackoff.Std()
	var pe *provider.Error
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		if maxWait > 0 && pe.RetryAfter > maxWait {
			return 0, false
		}
		return pe.RetryAfter, fits(ctx, pe.RetryAfter)
	}
	d := r.Backoff.Std()
	for i := 1; i < attempt && d > 0; i++ {
		d *= 2
		if maxWait > 0 && d >= maxWait {
			break
		}
	}
	if r.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + r.Jitter*(2*m.cfg.Rand()-1)))
	}
	if maxWait > 0 && d > maxWait {
		d = maxWait
	}
	return max(d, 0), fits(ctx, d)
}

func fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

// attempt makes one HTTP request. delivered reports whether any text or
// thinking reached onEvent.
func (m *Model) attempt(ctx context.Context, body []byte, onEvent func(provider.Event)) (provider.Response, bool, failure) {
	ex := &exchange{stream: m.cfg.Streaming, maxBytes: m.maxResponseBytes()}
	actx, cancel := context.WithCancelCause(context.WithValue(ctx, exchangeKey{}, ex))
	defer cancel(nil)
	// The first-event timer runs from the request's start, so it covers a
	// server that accepts the connection and then says nothing.
	var timer *time.Timer
	if d := m.cfg.Timeouts.FirstEvent.Std(); d > 0 {
		timer = time.AfterFunc(d, func() { cancel(errFirstEventTimeout) })
		defer timer.Stop()
	}
	resp, err := m.post(actx, body)
	if err != nil {
		return provider.Response{}, false, m.classify(ctx, actx, err, ex)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= http.StatusBadRequest {
		errBody, err := io.ReadAll(resp.Body)
		if err != nil {
			return provider.Response{}, false, m.classify(ctx, actx, fmt.Errorf("reading the error response: %w", err), ex)
		}
		return provider.Response{}, false, m.fromAPIError(parseAPIError(resp.StatusCode, errBody), ex)
	}
	if !m.cfg.Streaming {
		msg, err := decodeMessage(resp)
		if err != nil {
			return provider.Response{}, false, m.classify(ctx, actx, err, ex)
		}
		if timer != nil {
			timer.Stop()
		}
		onEvent(provider.Event{Started: true})
		if msg == nil {
			// A body of null decodes to no message.
			return provider.Response{}, false, failure{err: m.typed(provider.MalformedResponse, "", ex.status, errors.New("the response is not a message"))}
		}
		turn := turnBuilder{max: ex.maxBytes}
		turn.plain(msg)
		if turn.over() {
			return provider.Response{}, false, failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, turn.overError())}
		}
		if turn.err != nil {
			return provider.Response{}, false, m.classify(ctx, actx, turn.err, ex)
		}
		out, f := m.finish(turn.response(), ex)
		if f.err != nil {
			return out, false, f
		}
		for _, t := range out.Thinking {
			if t.Text != "" {
				onEvent(provider.Event{ReasoningDelta: t.Text})
			}
		}
		if out.Content != "" {
			onEvent(provider.Event{ContentDelta: out.Content})
		}
		for i, c := range out.ToolCalls {
			onEvent(provider.Event{ToolCallDelta: c.Name, ToolCall: &provider.ToolCallPiece{Index: i, ID: c.ID, Name: c.Name}})
			onEvent(provider.Event{ToolCallDelta: c.Arguments, ToolCall: &provider.ToolCallPiece{Index: i, Arguments: c.Arguments}})
		}
		return out, out.Content != "", f
	}

	events := newSSEReader(resp.Body, int(min(eventLimit(ex.maxBytes), math.MaxInt32)))
	var (
		turn      = turnBuilder{max: ex.maxBytes}
		delivered bool
		first     = true
		idle      = m.cfg.Timeouts.Idle.Std()
		idleTimer *time.Timer
	)
	if idle > 0 {
		idleTimer = time.AfterFunc(idle, func() { cancel(errIdleTimeout) })
		idleTimer.Stop()
		defer idleTimer.Stop()
	}
	for !turn.stopped {
		ev, err := nextEvent(events)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return provider.Response{}, delivered, m.classify(ctx, actx, err, ex)
		}
		switch {
		case first && timer != nil:
			timer.Stop()
		case idleTimer != nil:
			idleTimer.Stop()
		}
		if first {
			onEvent(provider.Event{Started: true})
		}
		first = false
		// The idle timer is stopped while onEvent runs: the caller's
		// handling of a delta is not the server being idle.
		e := turn.add(ev)
		if turn.over() {
			return provider.Response{}, delivered, failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, turn.overError())}
		}
		if turn.err != nil {
			return provider.Response{}, delivered, m.classify(ctx, actx, turn.err, ex)
		}
		if e != (provider.Event{}) {
			// A tool call's pieces are for counting only: retrying after
			// them shows nobody anything twice.
			delivered = delivered || e.ContentDelta != "" || e.ReasoningDelta != ""
			onEvent(e)
			if ctx.Err() != nil {
				// The caller stopped the call (its budget, say) from
				// onEvent: stop now, not at the next read.
				return provider.Response{}, delivered, m.classify(ctx, actx, ctx.Err(), ex)
			}
		}
		if idleTimer != nil && !turn.stopped {
			idleTimer.Reset(idle)
		}
	}
	if actx.Err() != nil {
		// A timer fired as the body ended: the cut-off stream is the
		// timer's doing.
		return provider.Response{}, delivered, m.classify(ctx, actx, actx.Err(), ex)
	}
	if !turn.stopped {
		// The body ended cleanly without message_stop: the connection
		// closed early, at an event boundary.
		return provider.Response{}, delivered, m.classify(ctx, actx, errTruncated, ex)
	}
	drain(ex.body, cancel)
	out, f := m.finish(turn.response(), ex)
	return out, delivered, f
}

// post sends the request body to the Messages API.
func (m *Model) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// The headers the official SDK sent, but for its own telemetry
	// (User-Agent and X-Stainless-*).
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", apiVersion)
	if m.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	return m.client.Do(req)
}

// deprecatedThinking are the models for which Anthropic deprecates thinking
// of type enabled (a budget) in favour of adaptive, as the official SDK
// v2.17.0 lists them.
var deprecatedThinking = map[string]bool{
	"claude-opus-4-6":       true,
	"claude-mythos-preview": true,
}

// warnings is where the deprecation warning goes.
var warnings io.Writer = os.Stderr

// warnIfThinkingDeprecated prints, at each attempt, the warning the SDK
// printed for a request with thinking enabled to a model that deprecates
// it.
func warnIfThinkingDeprecated(params messagesBody) {
	if params.Thinking == nil || params.Thinking.Type != ThinkingEnabled || !deprecatedThinking[params.Model] {
		return
	}
	fmt.Fprintf(warnings, "Warning: Using Claude with %s and 'thinking.type=enabled' is deprecated. Use 'thinking.type=adaptive' instead which results in better model performance in our testing: https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking\n", params.Model)
}

// apiVersion is the version of the Messages API the requests are written
// for: the one the official SDK v2.17.0 asked for (no temperature; the
// top-level cache_control; adaptive thinking).
const apiVersion = "2026-10-21"

// decodeMessage reads a plain response's body: a JSON message, or nil for a
// body of null. Only the first JSON value is decoded, as the SDK decoded it.
func decodeMessage(resp *http.Response) (*message, error) {
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !strings.Contains(mediaType, "application/json") && !strings.HasSuffix(mediaType, "+json") {
		return nil, fmt.Errorf("the response's content type is %q, not JSON", resp.Header.Get("Content-Type"))
	}
	// The body is read whole (within its bound) before it is decoded: a
	// body cut short is a transport failure, not malformed JSON, and the
	// connection goes back to the pool.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	var msg *message
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&msg); err != nil {
		return nil, fmt.Errorf("decoding the response: %w", err)
	}
	return msg, nil
}

// nextEvent is the stream's next event that has something for the turn:
// pings, events without a name or without data, and events of types this
// client does not know (the API may add some) are passed over. An error
// event is returned as an *apiError with no status, since the error had
// none of its own. At the body's end it returns io.EOF.
func nextEvent(events *sseReader) (streamEvent, error) {
	for {
		name, data, err := events.next()
		if err != nil {
			return streamEvent{}, err
		}
		switch name {
		case "error":
			return streamEvent{}, parseAPIError(0, data)
		case "message_start", "message_delta", "message_stop",
			"content_block_start", "content_block_delta", "content_block_stop":
		default:
			// ping, no name, or a type this client does not know.
			continue
		}
		if len(data) == 0 {
			continue
		}
		var ev streamEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return streamEvent{}, fmt.Errorf("%w: event %s: %w", errMalformed, name, err)
		}
		return ev, nil
	}
}

// drain reads the rest of a finished stream's body, so the connection goes
// back to the pool: the stream is left at message_stop, and a body closed
// before its end (the chunked terminator, which often arrives a moment
// after) takes its connection with it. It reads at most drainLimit bytes
// for at most drainWait (the attempt's idle timer, still armed, ends it
// sooner when shorter); after that the connection is given up. The turn is
// complete either way, so nothing here is an error.
func drain(body io.Reader, cancel context.CancelCauseFunc) {
	if body == nil {
		return
	}
	t := time.AfterFunc(drainWait, func() { cancel(errDrainTimeout) })
	defer t.Stop()
	_, _ = io.CopyN(io.Discard, body, drainLimit)
}

const (
	drainLimit = 64 << 10
	drainWait  = time.Second
)

var errDrainTimeout = errors.New("the stream's body did not end after message_stop")

// turnBuilder assembles a turn from the stream's events: its blocks by
// index (text, thinking with its signature, redacted thinking, tool use
// whose input arrives in pieces), the stop reason, and usage from
// message_start and message_delta. It counts the turn's bytes as they
// arrive, against max.
type turnBuilder struct {
	blocks  []*block
	stop    string
	stopped bool // message_stop arrived
	usage   provider.Usage
	known   bool // usage was reported
	err     error
	calls   int // tool_use blocks so far
	// id and model are the message's, as message_start names them.
	id, model string

	max  int64 // max_response_bytes
	size int64 // bytes of text, thinking, signatures and calls so far
}

type block struct {
	typ       string
	text      strings.Builder // text, thinking, or a tool call's input
	signature string
	data      string // redacted thinking
	id, name  string
	call      int // a tool_use block's place among the turn's tool calls
}

// callOverhead is what a block counts for itself, beyond its text, so that
// a flood of empty tool calls or blocks is bounded too.
const callOverhead = 64

func (b *turnBuilder) over() bool { return b.max > 0 && b.size > b.max }

func (b *turnBuilder) overError() error {
	return fmt.Errorf("the response passed max_response_bytes: more than %d bytes of text, thinking and tool calls", b.max)
}

// add takes one event and returns what of it the caller sees now.
func (b *turnBuilder) add(ev streamEvent) provider.Event {
	switch ev.Type {
	case "message_start":
		if msg := ev.Message; msg != nil {
			b.id, b.model = msg.ID, msg.Model
			if u := msg.Usage; u != nil {
				b.setUsage(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
			}
		}
	case "message_delta":
		if ev.Delta.StopReason != nil {
			b.stop = *ev.Delta.StopReason
		}
		if u := ev.Usage; u != nil {
			// Each count is the message's total so far; one not sent
			// keeps what message_start said.
			in, write, read := b.usage.PromptTokens-b.usage.CacheReadTokens-b.usage.CacheWriteTokens, b.usage.CacheWriteTokens, b.usage.CacheReadTokens
			if u.InputTokens != nil {
				in = *u.InputTokens
			}
			if u.CacheCreationInputTokens != nil {
				write = *u.CacheCreationInputTokens
			}
			if u.CacheReadInputTokens != nil {
				read = *u.CacheReadInputTokens
			}
			b.setUsage(in, write, read, u.OutputTokens)
		}
	case "message_stop":
		b.stopped = true
	case "content_block_start":
		if ev.Index != int64(len(b.blocks)) {
			b.err = fmt.Errorf("%w: content block %d started where block %d was expected", errMalformed, ev.Index, len(b.blocks))
			return provider.Event{}
		}
		cb := ev.ContentBlock
		blk := &block{typ: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature, data: cb.Data}
		if cb.Type == "tool_use" {
			blk.call = b.calls
			b.calls++
		}
		b.blocks = append(b.blocks, blk)
		b.size += callOverhead + int64(len(cb.ID)+len(cb.Name)+len(cb.Signature)+len(cb.Data))
		var e provider.Event
		switch cb.Type {
		case "text":
			e.ContentDelta = b.write(blk, cb.Text)
		case "thinking":
			e.ReasoningDelta = b.write(blk, cb.Thinking)
		case "tool_use":
			e.ToolCallDelta = cb.Name
			if !b.over() {
				e.ToolCall = &provider.ToolCallPiece{Index: blk.call, ID: cb.ID, Name: cb.Name}
			}
		}
		return e
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(b.blocks)) {
			b.err = fmt.Errorf("%w: a delta for content block %d, which never started", errMalformed, ev.Index)
			return provider.Event{}
		}
		blk := b.blocks[ev.Index]
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			return provider.Event{ContentDelta: b.write(blk, d.Text)}
		case "thinking_delta":
			return provider.Event{ReasoningDelta: b.write(blk, d.Thinking)}
		case "signature_delta":
			b.size += int64(len(d.Signature))
			if !b.over() {
				blk.signature += d.Signature
			}
		case "input_json_delta":
			piece := b.write(blk, d.PartialJSON)
			e := provider.Event{ToolCallDelta: piece}
			if piece != "" {
				e.ToolCall = &provider.ToolCallPiece{Index: blk.call, Arguments: piece}
			}
			return e
		}
	}
	return provider.Event{}
}

// write appends s to blk's text and returns it, or "" once the turn has
// passed its bound.
func (b *turnBuilder) write(blk *block, s string) string {
	b.size += int64(len(s))
	if b.over() {
		return ""
	}
	blk.text.WriteString(s)
	return s
}

// setUsage records Anthropic's counts: input_tokens is the part of the
// prompt the cache did not supply.
func (b *turnBuilder) setUsage(input, cacheWrite, cacheRead, output int64) {
	prompt := input + cacheWrite + cacheRead
	b.usage = provider.Usage{
		PromptTokens: prompt, CompletionTokens: output, TotalTokens: prompt + output,
		CacheReadTokens: cacheRead, CacheWriteTokens: cacheWrite,
	}
	b.known = true
}

// plain builds the turn from a whole (non-streamed) message.
func (b *turnBuilder) plain(msg *message) {
	b.id, b.model = msg.ID, msg.Model
	for _, cb := range msg.Content {
		blk := &block{typ: cb.Type, id: cb.ID, name: cb.Name, signature: cb.Signature, data: cb.Data}
		b.blocks = append(b.blocks, blk)
		b.size += callOverhead + int64(len(cb.ID)+len(cb.Name)+len(cb.Signature)+len(cb.Data))
		switch cb.Type {
		case "text":
			b.write(blk, cb.Text)
		case "thinking":
			b.write(blk, cb.Thinking)
		case "tool_use":
			b.write(blk, string(cb.Input))
		}
	}
	b.stop = msg.StopReason
	if u := msg.Usage; u != nil {
		b.setUsage(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
	}
}

func (b *turnBuilder) response() provider.Response {
	resp := provider.Response{FinishReason: b.stop, Usage: b.usage, UsageKnown: b.known, ID: b.id, Model: b.model}
	var content, reasoning strings.Builder
	for _, blk := range b.blocks {
		switch blk.typ {
		case "text":
			content.WriteString(blk.text.String())
		case "thinking":
			// The text is also the turn's Reasoning, journalled and shown
			// like any provider's (the signed block goes back to the API).
			reasoning.WriteString(blk.text.String())
			resp.Thinking = append(resp.Thinking, provider.Thinking{Text: blk.text.String(), Signature: blk.signature})
		case "redacted_thinking":
			resp.Thinking = append(resp.Thinking, provider.Thinking{Redacted: blk.data})
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: blk.id, Name: blk.name, Arguments: orEmptyObject(blk.text.String())})
		}
	}
	resp.Content = content.String()
	resp.Reasoning = reasoning.String()
	return resp
}

// finish applies the rules every turn shares: a refusal is an error, and so
// is a turn with neither text nor tool calls.
func (m *Model) finish(resp provider.Response, ex *exchange) (provider.Response, failure) {
	switch {
	case resp.FinishReason == "refusal":
		reason := "the model declined to answer (stop_reason refusal)"
		if resp.Content != "" {
			reason = resp.Content
		}
		return provider.Response{}, failure{err: m.typed(provider.Refusal, "", ex.status, errors.New(reason))}
	case resp.Content == "" && len(resp.ToolCalls) == 0:
		return provider.Response{}, failure{err: m.typed(provider.EmptyResponse, resp.FinishReason, ex.status, errors.New("the model answered with neither text nor tool calls"))}
	}
	for i, c := range resp.ToolCalls {
		if c.Name == "" {
			return provider.Response{}, failure{err: m.typed(provider.MalformedResponse, "", ex.status, fmt.Errorf("tool call %d (%s) has no name", i, c.ID))}
		}
		if c.ID == "" {
			return provider.Response{}, failure{err: m.typed(provider.MalformedResponse, "", ex.status, fmt.Errorf("tool call %d (%s) has no id", i, c.Name))}
		}
	}
	return resp, failure{}
}

// orEmptyObject gives a call whose input arrived in no pieces the "{}"
// content_block_start announced.
func orEmptyObject(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}
