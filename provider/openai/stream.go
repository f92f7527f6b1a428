package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/internal/backoff"
	"github.com/symbi-dev/symbi/provider"
)

// Stream makes one model call: up to Retry.MaxAttempts attempts, under the
// total timeout. Deltas reach onEvent as they arrive; once one has, the call
// is not retried, so the caller never sees text twice.
func (m *Model) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	chat, encoded, err := m.chatRequest(req)
	if err != nil {
		return provider.Response{}, err
	}
	chat, wire := withoutMessages(chat, encoded)
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
		resp, delivered, f := m.attempt(ctx, chat, wire, onEvent)
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
// gave one, else the exponential backoff every retry follows (package
// backoff: doubling, jittered, capped at max_backoff). It declines (false) when
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
	d := backoff.Policy{Initial: r.Backoff.Std(), Max: maxWait, Jitter: r.Jitter}.Wait(attempt, m.cfg.Rand)
	return d, fits(ctx, d)
}

func fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

// attempt makes one HTTP request: chat, with wire's messages in its body.
// delivered reports whether any delta reached onEvent.
func (m *Model) attempt(ctx context.Context, chat goopenai.ChatCompletionRequest, wire *wireMessages, onEvent func(provider.Event)) (provider.Response, bool, failure) {
	ex := &exchange{stream: chat.Stream, maxBytes: m.maxResponseBytes(), wire: wire}
	actx, cancel := context.WithCancelCause(context.WithValue(ctx, exchangeKey{}, ex))
	defer cancel(nil)
	// The first-event timer runs from the request's start, so it covers a
	// server that accepts the connection and then says nothing.
	var timer *time.Timer
	if d := m.cfg.Timeouts.FirstEvent.Std(); d > 0 {
		timer = time.AfterFunc(d, func() { cancel(errFirstEventTimeout) })
		defer timer.Stop()
	}
	if !chat.Stream {
		resp, err := m.client.CreateChatCompletion(actx, chat)
		if err != nil {
			return provider.Response{}, false, m.classify(ctx, actx, err, ex)
		}
		if timer != nil {
			timer.Stop()
		}
		out, f := m.plainResponse(resp, ex)
		if f.err != nil {
			return out, false, f
		}
		onEvent(provider.Event{Started: true})
		if out.Reasoning != "" {
			onEvent(provider.Event{ReasoningDelta: out.Reasoning})
		}
		if out.Content != "" {
			onEvent(provider.Event{ContentDelta: out.Content})
		}
		for i, c := range out.ToolCalls {
			onEvent(provider.Event{ToolCallDelta: c.Name, ToolCall: &provider.ToolCallPiece{Index: i, ID: c.ID, Name: c.Name}})
			onEvent(provider.Event{ToolCallDelta: c.Arguments, ToolCall: &provider.ToolCallPiece{Index: i, Arguments: c.Arguments}})
		}
		return out, out.Content != "" || out.Reasoning != "", f
	}

	stream, err := m.client.CreateChatCompletionStream(actx, chat)
	if err != nil {
		return provider.Response{}, false, m.classify(ctx, actx, err, ex)
	}
	defer stream.Close()

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
	for {
		data, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) && actx.Err() == nil {
			break
		}
		if err == nil && data == nil {
			// go-openai read an event that began with {"error": and
			// could not make an error of it.
			err = &goopenai.APIError{Message: "an error the server sent in a form that cannot be read"}
		}
		if err != nil {
			return provider.Response{}, delivered, m.classify(ctx, actx, err, ex)
		}
		c, err := decodeChunk(data)
		if err != nil {
			return provider.Response{}, delivered, m.classify(ctx, actx, err, ex)
		}
		if e := c.errorOf(data); e != nil {
			return provider.Response{}, delivered, m.apiFailure(0, e, inStream, ex)
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
		e := turn.add(c)
		if turn.over() {
			return provider.Response{}, delivered, failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, turn.overError())}
		}
		var more []provider.ToolCallPiece
		if len(turn.pieces) > 0 {
			// Copies: the builder reuses its pieces for the next chunk.
			p := turn.pieces[0]
			e.ToolCall, more = &p, slices.Clone(turn.pieces[1:])
		}
		if e != (provider.Event{}) {
			// A tool call's pieces are for counting and showing only:
			// retrying after them shows nobody any text twice.
			delivered = delivered || e.ContentDelta != "" || e.ReasoningDelta != ""
			onEvent(e)
			for i := range more {
				onEvent(provider.Event{ToolCall: &more[i]})
			}
			if ctx.Err() != nil {
				// The caller stopped the call (its budget, say) from
				// onEvent: stop now, not at the next read.
				return provider.Response{}, delivered, m.classify(ctx, actx, ctx.Err(), ex)
			}
		}
		if idleTimer != nil {
			idleTimer.Reset(idle)
		}
	}
	if turn.finish == finishError {
		return provider.Response{}, delivered, m.apiFailure(0, &goopenai.APIError{Message: errFinishedWithError.Error()}, inStream, ex)
	}
	if !turn.finished && !ex.done {
		// Clean EOF with neither a finish reason nor [DONE]: the
		// connection closed early, at a chunk boundary.
		return provider.Response{}, delivered, m.classify(ctx, actx, errTruncated, ex)
	}
	drain(ex.body, cancel)
	resp := turn.response()
	// [DONE] without a finish reason, as some servers end every
	// answer: complete, and said so.
	resp.FinishReasonMissing = !turn.finished
	out, f := m.finish(resp, turn.refusal.String(), ex)
	return out, delivered, f
}

// finishError is the finish reason of a turn the server ended with an
// error (OpenRouter, mid-answer).
const finishError = "error"

// drain reads the rest of a finished stream's body: go-openai stops at
// "data: [DONE]", and a body closed before its end (the chunked
// terminator, which often arrives a moment after [DONE]) takes its
// connection with it, so the next call dials (and handshakes) again. It
// reads at most drainLimit bytes for at most drainWait (the attempt's idle
// timer, still armed, ends it sooner when shorter); after that the
// connection is given up, as before. The turn is complete either way, so
// nothing here is an error.
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

var errDrainTimeout = errors.New("the stream's body did not end after [DONE]")

// turnBuilder assembles a streamed turn: content in order, tool calls by
// their index (arguments arrive in pieces, possibly interleaved), usage from
// the final chunk. It counts the turn's bytes as they arrive, against max.
type turnBuilder struct {
	content   strings.Builder
	reasoning strings.Builder
	refusal   strings.Builder
	calls     map[int]*callBuilder
	last      int
	finish    string
	finished  bool
	usage     *goopenai.Usage
	// pieces are the tool-call pieces of the last chunk, by call, for
	// display (provider.Event.ToolCall).
	pieces    []provider.ToolCallPiece
	id, model string // the turn's, from the first chunk that names them

	max  int64 // max_response_bytes
	size int64 // responseSize of what arrived so far
}

// callOverhead is what a tool call counts for itself, beyond its id, name
// and arguments, so that a flood of empty calls is bounded too.
const callOverhead = 64

func (b *turnBuilder) over() bool { return b.max > 0 && b.size > b.max }

func (b *turnBuilder) overError() error {
	return fmt.Errorf("the response passed max_response_bytes: more than %d bytes of content, reasoning and tool calls", b.max)
}

type callBuilder struct {
	id, name string
	args     strings.Builder
}

// add takes one chunk and returns what of it the caller sees now.
func (b *turnBuilder) add(chunk chunk) provider.Event {
	if chunk.Usage != nil {
		b.usage = chunk.Usage
	}
	if b.id == "" {
		b.id = chunk.ID
	}
	if b.model == "" {
		b.model = chunk.Model
	}
	var delta, reasoning, calls strings.Builder
	b.pieces = b.pieces[:0]
	for i := range chunk.Choices {
		c := &chunk.Choices[i]
		if c.Index != 0 {
			continue // only one choice is ever asked for
		}
		thought := reasoningOf(&c.Delta.reasoningFields)
		delta.WriteString(c.Delta.Content)
		reasoning.WriteString(thought)
		b.refusal.WriteString(c.Delta.Refusal)
		b.size += int64(len(c.Delta.Content) + len(thought) + len(c.Delta.Refusal))
		for _, tc := range c.Delta.ToolCalls {
			b.addCall(tc, &calls)
		}
		if c.FinishReason != "" && c.FinishReason != string(goopenai.FinishReasonNull) {
			b.finish = c.FinishReason
			b.finished = true
		}
	}
	if b.over() {
		return provider.Event{}
	}
	b.content.WriteString(delta.String())
	b.reasoning.WriteString(reasoning.String())
	return provider.Event{ContentDelta: delta.String(), ReasoningDelta: reasoning.String(), ToolCallDelta: calls.String()}
}

// addCall adds a tool-call delta, and its name (when new) and arguments to
// pieces.
func (b *turnBuilder) addCall(tc goopenai.ToolCall, pieces *strings.Builder) {
	if b.calls == nil {
		b.calls = map[int]*callBuilder{}
	}
	idx := b.last
	switch {
	case tc.Index != nil:
		idx = *tc.Index
	case len(b.calls) == 0:
		idx = 0
	case tc.ID != "" && b.calls[b.last] != nil && b.calls[b.last].id != "" && b.calls[b.last].id != tc.ID:
		// Servers that omit the index send each call whole, with a new id.
		idx = b.last + 1
	}
	b.last = idx
	c := b.calls[idx]
	if c == nil {
		c = &callBuilder{}
		b.calls[idx] = c
		b.size += callOverhead
	}
	if tc.ID != "" {
		if c.id == "" {
			b.size += int64(len(tc.ID))
		}
		c.id = tc.ID
	}
	// The name comes whole in the call's first delta; some servers repeat it.
	piece := provider.ToolCallPiece{Index: idx, ID: tc.ID}
	if c.name == "" && tc.Function.Name != "" {
		c.name = tc.Function.Name
		b.size += int64(len(c.name))
		pieces.WriteString(c.name)
		piece.Name = c.name
	}
	b.size += int64(len(tc.Function.Arguments))
	if b.over() {
		return
	}
	c.args.WriteString(tc.Function.Arguments)
	pieces.WriteString(tc.Function.Arguments)
	piece.Arguments = tc.Function.Arguments
	if piece != (provider.ToolCallPiece{Index: idx}) {
		b.pieces = append(b.pieces, piece)
	}
}

func (b *turnBuilder) response() provider.Response {
	resp := provider.Response{Content: b.content.String(), Reasoning: b.reasoning.String(), FinishReason: b.finish, ID: b.id, Model: b.model}
	idxs := make([]int, 0, len(b.calls))
	for i := range b.calls {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for n, i := range idxs {
		c := b.calls[i]
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", n)
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: id, Name: c.name, Arguments: orEmptyObject(c.args.String())})
	}
	if b.usage != nil {
		resp.Usage = usage(*b.usage)
		resp.UsageKnown = true
	}
	return resp
}

func (m *Model) plainResponse(r goopenai.ChatCompletionResponse, ex *exchange) (provider.Response, failure) {
	body := ex.plain
	ex.plain = nil
	if len(r.Choices) == 0 {
		if e := plainError(body); e != nil {
			return provider.Response{}, m.apiFailure(0, e, inAnswer, ex)
		}
		return provider.Response{}, failure{err: m.typed(provider.MalformedResponse, "", ex.status, errors.New("the response has no choices"))}
	}
	c := r.Choices[0]
	resp := provider.Response{Content: c.Message.Content, Reasoning: plainReasoning(body), FinishReason: string(c.FinishReason), ID: r.ID, Model: r.Model}
	if resp.Reasoning == "" {
		resp.Reasoning = c.Message.ReasoningContent
	}
	if resp.FinishReason == string(goopenai.FinishReasonNull) {
		resp.FinishReason = ""
	}
	resp.FinishReasonMissing = resp.FinishReason == ""
	for n, tc := range c.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", n)
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: id, Name: tc.Function.Name, Arguments: orEmptyObject(tc.Function.Arguments)})
	}
	if u := r.Usage; u.PromptTokens != 0 || u.CompletionTokens != 0 || u.TotalTokens != 0 {
		resp.Usage = usage(u)
		resp.UsageKnown = true
	}
	size := int64(len(resp.Content) + len(resp.Reasoning) + len(c.Message.Refusal))
	for _, tc := range resp.ToolCalls {
		size += callOverhead + int64(len(tc.ID)+len(tc.Name)+len(tc.Arguments))
	}
	if tb := (turnBuilder{max: ex.maxBytes, size: size}); tb.over() {
		return provider.Response{}, failure{err: m.typed(provider.ResponseTooLarge, "", ex.status, tb.overError())}
	}
	return m.finish(resp, c.Message.Refusal, ex)
}

// finish applies the rules every turn shares: a refusal is an error, and so
// is a turn with neither text nor tool calls.
func (m *Model) finish(resp provider.Response, refusal string, ex *exchange) (provider.Response, failure) {
	switch {
	case refusal != "":
		return provider.Response{}, failure{err: m.typed(provider.Refusal, "", ex.status, errors.New(refusal))}
	case resp.FinishReason == string(goopenai.FinishReasonContentFilter):
		return provider.Response{}, failure{err: m.typed(provider.Refusal, "content_filter", ex.status, errors.New("the provider's content filter stopped the answer"))}
	case resp.Content == "" && len(resp.ToolCalls) == 0:
		return provider.Response{}, failure{err: m.typed(provider.EmptyResponse, resp.FinishReason, ex.status, errors.New("the model answered with neither text nor tool calls"))}
	}
	for i, c := range resp.ToolCalls {
		if c.Name == "" {
			return provider.Response{}, failure{err: m.typed(provider.MalformedResponse, "", ex.status, fmt.Errorf("tool call %d (%s) has no name", i, c.ID))}
		}
	}
	return resp, failure{}
}

// usage is taken as the provider reported it; reconciling totals smaller
// than prompt+completion is the engine's business.
func usage(u goopenai.Usage) provider.Usage {
	return provider.Usage{PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), TotalTokens: int64(u.TotalTokens)}
}

// orEmptyObject gives a call without arguments the "{}" OpenAI itself sends;
// some compatible servers send nothing for a function without parameters.
func orEmptyObject(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}
