package scripted

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

// Model plays a Script. Each turn is used at most once per Model (unless the
// script repeats its last turn when exhausted). Safe for concurrent use.
type Model struct {
	script *Script

	mu       sync.Mutex
	consumed []bool
	requests []provider.Request
}

var _ provider.Model = (*Model)(nil)

// New returns a Model that plays s from its first turn.
func New(s *Script) *Model {
	return &Model{script: s, consumed: make([]bool, len(s.Turns))}
}

// Requests returns a copy of every request the Model received, in the order
// they arrived.
func (m *Model) Requests() []provider.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]provider.Request(nil), m.requests...)
}

// Stream plays the turn chosen for req: it waits the turn's latency (or
// until ctx ends), delivers its chunks to onEvent, and returns the turn.
func (m *Model) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	turn, err := m.take(req)
	if err != nil {
		return provider.Response{}, err
	}
	if turn.Latency > 0 {
		t := time.NewTimer(turn.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return provider.Response{}, ctx.Err()
		case <-t.C:
		}
	}
	if turn.Error != nil {
		e := *turn.Error
		return provider.Response{}, &e
	}
	if turn.Content == "" && len(turn.ToolCalls) == 0 {
		return provider.Response{}, &provider.Error{Kind: provider.EmptyResponse, Detail: "scripted turn has neither content nor tool calls"}
	}
	if onEvent != nil {
		chunks := turn.Chunks
		if len(chunks) == 0 && turn.Content != "" {
			chunks = []string{turn.Content}
		}
		for _, c := range chunks {
			if err := ctx.Err(); err != nil {
				return provider.Response{}, err
			}
			if c != "" {
				onEvent(provider.Event{ContentDelta: c})
			}
		}
	}
	resp := provider.Response{
		Content:      turn.Content,
		ToolCalls:    append([]provider.ToolCall(nil), turn.ToolCalls...),
		UsageKnown:   true,
		FinishReason: turn.FinishReason,
	}
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	if turn.Usage != nil {
		resp.Usage = *turn.Usage
	} else {
		resp.Usage = estimateUsage(req, turn)
	}
	return resp, nil
}

// take records req and picks its turn: the first unconsumed turn whose
// conditions all hold (`when` matches the latest user or tool message,
// `when_temperature` equals the request's temperature). When none is left,
// on_exhausted decides.
func (m *Model) take(req provider.Request) (Turn, error) {
	subject := latestInput(req.Messages)
	fits := func(t Turn) bool {
		return (t.When == nil || t.When.MatchString(subject)) &&
			(t.WhenTemperature == nil || (req.Temperature != nil && math.Abs(*req.Temperature-*t.WhenTemperature) < 1e-9))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, cloneRequest(req))
	for i, t := range m.script.Turns {
		if !m.consumed[i] && fits(t) {
			m.consumed[i] = true
			return t, nil
		}
	}
	if m.script.OnExhausted == OnExhaustedRepeatLast {
		for i := len(m.script.Turns) - 1; i >= 0; i-- {
			if t := m.script.Turns[i]; fits(t) {
				return t, nil
			}
		}
	}
	return Turn{}, &provider.Error{Kind: provider.InvalidRequest, Detail: "scripted", Err: ErrExhausted}
}

// latestInput is what `when` is matched against: the text of the latest user
// or tool message, or "" when there is none.
func latestInput(msgs []provider.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if r := msgs[i].Role; r == provider.User || r == provider.ToolRole {
			return msgs[i].Content
		}
	}
	return ""
}

// estimateUsage gives a turn without scripted usage the counts the engine's
// own estimator would give, so budgets behave as with a real provider.
func estimateUsage(req provider.Request, t Turn) provider.Usage {
	var prompt, completion int64
	for _, m := range req.Messages {
		prompt += int64(stdlib.EstimateTokens(m.Content))
		for _, c := range m.ToolCalls {
			prompt += int64(stdlib.EstimateTokens(c.Name) + stdlib.EstimateTokens(c.Arguments))
		}
	}
	completion = int64(stdlib.EstimateTokens(t.Content))
	for _, c := range t.ToolCalls {
		completion += int64(stdlib.EstimateTokens(c.Name) + stdlib.EstimateTokens(c.Arguments))
	}
	return provider.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// cloneRequest copies the slices a caller might reuse after Stream returns.
func cloneRequest(req provider.Request) provider.Request {
	msgs := make([]provider.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.ToolCalls = append([]provider.ToolCall(nil), m.ToolCalls...)
		msgs[i] = m
	}
	req.Messages = msgs
	req.Tools = append([]provider.ToolSpec(nil), req.Tools...)
	if req.Temperature != nil {
		t := *req.Temperature
		req.Temperature = &t
	}
	return req
}
