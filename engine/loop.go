package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/symbi-dev/symbi/convo"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// simple is one model answer without tools; the answer is gated like any
// other.
func (r *run) simple(ctx context.Context) error {
	if err := r.acct.Iteration(); err != nil {
		return err
	}
	r.iter++
	if err := r.injectKnowledge(ctx); err != nil {
		return err
	}
	resp, err := r.reason(ctx, modelCall{msgs: r.conv})
	if err != nil {
		return r.answerOverBudget(ctx, resp, err)
	}
	if resp.Content == "" {
		return &provider.Error{Kind: provider.EmptyResponse, Detail: "simple mode", Err: fmt.Errorf("the model proposed %d tool call(s) but no answer, and simple mode runs no tools", len(resp.ToolCalls))}
	}
	return r.respond(ctx, resp)
}

// react runs iterations until the model answers or a limit stops it.
func (r *run) react(ctx context.Context) error {
	for {
		done, err := r.step(ctx)
		if err != nil || done {
			return err
		}
	}
}

// step is one Reason → Gate → Act → Observe iteration over r.conv. Each
// phase takes the previous phase's product: proposals come only from reason,
// approvals only from the gate, observations only from act.
func (r *run) step(ctx context.Context) (done bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := r.acct.Iteration(); err != nil {
		return false, err
	}
	r.iter++
	// A server's new tool list is checked against the lock before the
	// model is offered it.
	if err := r.syncTools(ctx); err != nil {
		return false, err
	}
	// The run keeps only what the context strategy would send, so a long
	// run's memory stays bounded by token_budget; the journal has the rest.
	if err := r.injectKnowledge(ctx); err != nil {
		return false, err
	}
	fitted := convo.FitTokens(r.conv, r.agent.Context, r.tokens.Tokens(r.conv))
	if len(fitted) != len(r.conv) || len(fitted) > 0 && &fitted[0] != &r.conv[0] {
		r.tokens.Update(fitted) // the fitted conversation is a new one
	}
	r.conv = fitted
	resp, err := r.reason(ctx, r.reactCall())
	if err != nil {
		return false, r.answerOverBudget(ctx, resp, err)
	}
	if len(resp.ToolCalls) == 0 {
		return true, r.respond(ctx, resp)
	}
	r.conv = append(r.conv, provider.Message{Role: provider.Assistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Thinking: resp.Thinking})
	gated, err := r.gateCalls(ctx, resp.ToolCalls, r.proposed)
	if err != nil {
		return false, err
	}
	obs, err := r.act(ctx, gated)
	if err != nil {
		return false, err
	}
	if t, ok := terminated(gated); ok {
		// The turn's other approved calls have run (act); their results
		// close the iteration in the journal, and then the run ends.
		if err := r.observe(obs); err != nil {
			return false, err
		}
		return true, &TerminatedError{Reason: t.Reason}
	}
	if r.progress == nil {
		r.progress = NewProgressTracker(r.agent.Progress)
	}
	if err := r.trackProgress(ctx, r.progress, obs); err != nil {
		return false, err
	}
	return false, r.observe(obs)
}

// reactCall is the model call of one react iteration.
func (r *run) reactCall() modelCall {
	// r.tokens describes r.conv: step has just fitted it.
	c := modelCall{msgs: r.conv, fitted: true, msgTokens: r.tokens.Sum(), toolChoice: r.agent.Loop.ToolChoice}
	if r.agent.Loop.ToolChoice != "none" {
		c.tools, c.toolTokens = r.tools.specs, r.tools.specTokens
	}
	if len(c.tools) == 0 {
		c.toolChoice = ""
	}
	return c
}

// respond gates a final answer. A denied answer ends the run: the model
// had its chance to adapt while it was calling tools, and an answer that a
// policy forbids must not be shown.
func (r *run) respond(ctx context.Context, resp provider.Response) error {
	g := r.gateAction(ctx, policy.Action{Type: policy.Respond, Content: resp.Content})
	if err := r.recordGate([]gated{g}); err != nil {
		return err
	}
	if !g.ok {
		return &DenialError{Action: g.action, Decision: g.decision}
	}
	answer := g.approved.Action().Content
	if r.holdAnswer {
		// Nothing was streamed: show the answer the gate allowed (a modify
		// may have changed it), now that it has been decided.
		r.emitDelta(answer)
		r.flushDelta()
	}
	r.conv = append(r.conv, provider.Message{Role: provider.Assistant, Content: answer})
	r.complete(answer)
	return nil
}

// gateCalls turns the model's tool calls into actions and gates each, in
// the order the model gave them. actions, when it has one per call, is what
// reason made of them for the journal (actionOf of each call), and is taken
// as it is rather than made again.
func (r *run) gateCalls(ctx context.Context, calls []provider.ToolCall, actions []policy.Action) ([]gated, error) {
	// A list_changed that came while the model thought is settled first:
	// a tool the lock no longer vouches for is not gated as if it were.
	if err := r.syncTools(ctx); err != nil {
		return nil, err
	}
	out := make([]gated, len(calls))
	all := make([]policy.Action, len(calls))
	skip := make([]bool, len(calls))
	for i, c := range calls {
		all[i] = r.actionOf(c)
		if len(actions) == len(calls) {
			all[i] = actions[i]
		}
		if err := argumentsJSON(c.Arguments); err != nil {
			// The action holds such text as a JSON string, for the
			// journal; the model is told what is wrong with its text.
			note := fmt.Sprintf("[invalid arguments] %s: arguments are %v", c.Name, err)
			out[i] = gated{action: all[i], kind: obsInvalid, note: note, decision: policy.Decision{Outcome: policy.Deny, Reason: note, Engine: "engine"}}
			skip[i] = true
		}
	}
	r.decideAll(ctx, out, all, skip)
	return out, r.holdGate(out)
}

// argumentsJSON says where a model's tool-call arguments stop being JSON
// (policy.InvalidJSON); nil for JSON and for none at all, which is an
// empty object.
func argumentsJSON(args string) error {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	return policy.InvalidJSON([]byte(args))
}

// actionOf is the action a tool call proposes: the delegate tool proposes
// a delegation, the terminate tool (allow_terminate) the end of the run,
// any other tool a tool call.
func (r *run) actionOf(c provider.ToolCall) policy.Action {
	args := json.RawMessage(strings.TrimSpace(c.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		// Kept as a JSON string so the journal can hold it; the gate
		// refuses it, telling the model where its text stops being JSON.
		args, _ = json.Marshal(c.Arguments)
	}
	if c.Name == plan.DelegateTool && len(r.agent.Delegates) > 0 {
		var d struct {
			Target string `json:"target"`
			Task   string `json:"task"`
		}
		_ = json.Unmarshal(args, &d)
		return policy.Action{Type: policy.Delegate, CallID: c.ID, Target: strings.TrimPrefix(d.Target, "agent."), Task: d.Task, Arguments: args}
	}
	if c.Name == plan.TerminateTool && r.agent.Loop.AllowTerminate {
		return terminateAction(c, args)
	}
	a := policy.Action{Type: policy.ToolCall, Tool: c.Name, CallID: c.ID, Arguments: args}
	if info, ok := r.tools.info[c.Name]; ok {
		a.Effect = info.Effect
		a.Tags = info.Tags
	}
	return a
}

// observe appends the observations to the conversation and closes the
// iteration in the journal, with the messages a resume needs. After a round
// that acted on the world (a tool that writes: its call was written ahead)
// the line is written now, so the results of such calls are on disk as soon
// as the round ends; otherwise it is held for the next model call's
// write-ahead, and the iteration costs one write.
func (r *run) observe(obs []observation) error {
	data := observationsData{Messages: make([]provider.Message, 0, len(obs))}
	for _, o := range obs {
		m := provider.Message{Role: provider.ToolRole, ToolCallID: o.callID, Name: o.tool, Content: o.content}
		r.conv = append(r.conv, m)
		data.Messages = append(data.Messages, m)
		data.Count++
		switch o.kind {
		case obsDenied:
			data.Denied++
		case obsError:
			data.Errors++
		}
	}
	if r.wroteAhead {
		r.wroteAhead = false
		return r.mustRecord(journal.ObservationsCollected, data)
	}
	return r.hold(journal.ObservationsCollected, data)
}

// actionsOf lists what a model turn proposes, for the journal.
func (r *run) actionsOf(resp provider.Response) []policy.Action {
	if len(resp.ToolCalls) == 0 {
		return []policy.Action{{Type: policy.Respond, Content: resp.Content}}
	}
	out := make([]policy.Action, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		out[i] = r.actionOf(c)
	}
	return out
}

func denialText(reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("[policy denied] %s", reason)
}
