package engine

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// interrupted is what a resumed run learns from the journal of the
// attempts before it about the work they left unfinished.
type interrupted struct {
	// unfinished are the tool calls that were dispatched but have neither
	// a result nor an outcome the resumed run already settled, by
	// idempotency key. Each is settled once, by its tool's on_resume,
	// before it could run again (settleUnfinished).
	unfinished map[string]journal.DispatchedCall
	// cut is the iteration the last attempt acted in (it dispatched tools
	// or started a delegation) but did not close; nil when there is none.
	cut *cutRound
	// delegations counts the delegations already started, so a resumed
	// run's sub-runs do not take their run ids.
	delegations int
}

// cutRound is an iteration cut short after it acted: the model's turn, the
// gate's decisions, and what became of each action. The resumed run
// completes it from these rather than asking the model again, so calls that
// ran are not repeated and the model learns what is known of those that
// did not report back.
type cutRound struct {
	iteration int
	message   provider.Message
	actions   []policy.Action
	decisions []journal.GateRecord // the turn's gate, one per action; nil when not journalled
	acted     bool
	results   map[string]journal.ToolResultData          // by call id
	unknown   map[string]journal.ToolOutcomeUnknownData  // settled without running, by call id
	delegated map[string]*journal.DelegationFinishedData // started; nil until finished
}

// findInterrupted reads the journal of the attempts before a resume.
// lastComplete is the last iteration closed by observations_collected;
// withCut is false for modes that restart from the task.
func findInterrupted(runID string, events []journal.Event, lastComplete int, withCut bool) *interrupted {
	in := &interrupted{unfinished: map[string]journal.DispatchedCall{}}
	k := lastComplete + 1
	var cut *cutRound
	for _, ev := range events {
		switch ev.Type {
		case journal.ToolsDispatched:
			var d journal.ToolsDispatchedData
			if ev.Decode(&d) != nil {
				continue
			}
			for _, c := range d.Calls {
				in.unfinished[builtins.IdempotencyKey(runID, ev.Iteration, c.CallID)] = c
			}
			if cut != nil && ev.Iteration == k {
				cut.acted = true
			}
		case journal.ToolResult:
			var d journal.ToolResultData
			if ev.Decode(&d) != nil {
				continue
			}
			delete(in.unfinished, builtins.IdempotencyKey(runID, ev.Iteration, d.CallID))
			if cut != nil && ev.Iteration == k {
				cut.results[d.CallID] = d
			}
		case journal.ToolOutcomeUnknown:
			var d journal.ToolOutcomeUnknownData
			if ev.Decode(&d) != nil || d.Retried {
				continue // a retried call's own dispatch and result follow
			}
			delete(in.unfinished, builtins.IdempotencyKey(runID, ev.Iteration, d.CallID))
			if cut != nil && ev.Iteration == k {
				cut.unknown[d.CallID] = d
			}
		case journal.DelegationStarted:
			in.delegations++
			var d journal.DelegationStartedData
			if cut != nil && ev.Iteration == k && ev.Decode(&d) == nil {
				cut.acted = true
				cut.delegated[d.CallID] = nil
			}
		case journal.DelegationFinished:
			var d journal.DelegationFinishedData
			if cut != nil && ev.Iteration == k && ev.Decode(&d) == nil {
				cut.delegated[d.CallID] = &d
			}
		case journal.ReasoningComplete:
			var d reasoningData
			if !withCut || ev.Iteration != k || ev.Decode(&d) != nil {
				continue
			}
			// The latest turn of the iteration is the one that acted: an
			// earlier attempt may have redone the iteration from its model
			// call.
			cut = &cutRound{
				iteration: k,
				message:   d.Message,
				actions:   d.Actions,
				results:   map[string]journal.ToolResultData{},
				unknown:   map[string]journal.ToolOutcomeUnknownData{},
				delegated: map[string]*journal.DelegationFinishedData{},
			}
		case journal.PolicyEvaluated:
			var d journal.PolicyEvaluatedData
			if cut != nil && ev.Iteration == k && cut.decisions == nil && ev.Decode(&d) == nil && len(d.Decisions) == len(cut.actions) {
				cut.decisions = d.Decisions
			}
		}
	}
	if cut != nil && cut.acted && len(cut.message.ToolCalls) > 0 && len(cut.actions) == len(cut.message.ToolCalls) {
		in.cut = cut
	}
	return in
}

// chargeInFlight adds to u the model calls the journal shows were sent
// but never answered: a model_call_started without a reasoning_complete
// after it. The last one of an attempt was in flight when the process died
// and was paid for: it is charged as one call of its estimate (the
// preflight prompt estimate and the output allowance, as a call whose
// provider reports no usage is). One followed by another call of the same
// attempt failed, and is charged as a call, as the live run did.
func chargeInFlight(u *budget.Usage, events []journal.Event) {
	var open *journal.ModelCallStartedData
	settle := func(killed bool) {
		if open == nil {
			return
		}
		u.ModelCalls++
		if killed {
			// A line edited to hold negative figures must not give budget
			// back.
			prompt, completion := max(open.EstimatedPromptTokens, 0), max(open.EstimatedCompletionTokens, 0)
			u.PromptTokens = addSat(u.PromptTokens, prompt)
			u.CompletionTokens = addSat(u.CompletionTokens, completion)
			u.TotalTokens = addSat(u.TotalTokens, addSat(prompt, completion))
			if open.EstimatedCostUSD > 0 && !math.IsInf(open.EstimatedCostUSD, 0) {
				u.CostUSD += open.EstimatedCostUSD
			}
		}
		open = nil
	}
	for _, ev := range events {
		switch ev.Type {
		case journal.ModelCallStarted:
			settle(false)
			var d journal.ModelCallStartedData
			if ev.Decode(&d) == nil {
				open = &d
			}
		case journal.ReasoningComplete:
			open = nil // counted by spentBy
		case journal.Started, journal.Terminated:
			settle(true) // the attempt before this line ended with the call open
		}
	}
	settle(true)
}

// addSat adds two non-negative counts, saturating instead of overflowing.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// resumeCut puts the cut-short iteration's turn back in the conversation;
// completeCut then finishes the iteration.
func (r *run) resumeCut() {
	c := r.interrupted.cut
	r.iter = c.iteration
	r.conv = append(r.conv, c.message)
}

// completeCut finishes the iteration the earlier attempt was cut short in,
// without asking the model again: an action whose outcome the journal has
// (a result, a denial, a finished delegation, an outcome already settled)
// observes it; a tool call dispatched without a result is settled by its
// tool's on_resume; a delegation that started and did not finish is not run
// again; any other action is gated again and acted on, as the iteration
// would have.
func (r *run) completeCut(ctx context.Context) error {
	c := r.interrupted.cut
	r.interrupted.cut = nil
	obs := make([]observation, len(c.actions))
	var pending []gated
	var at []int
	for i, a := range c.actions {
		obs[i] = observation{callID: a.CallID, tool: actionName(a)}
		key := builtins.IdempotencyKey(r.id, c.iteration, a.CallID)
		if a.Type == policy.ToolCall {
			if res, ok := c.results[a.CallID]; ok {
				obs[i].content, obs[i].kind = resultObservation(res)
				continue
			}
			if u, ok := c.unknown[a.CallID]; ok {
				obs[i].content, obs[i].kind = unknownNote(a.Tool, u.Reason), obsError
				continue
			}
			if _, ok := r.interrupted.unfinished[key]; ok {
				rerun, note, err := r.settleUnfinished(ctx, a, key)
				if err != nil {
					return err
				}
				if !rerun {
					obs[i].content, obs[i].kind = note, obsError
					continue
				}
			}
		}
		if a.Type == policy.Delegate {
			if fin, started := c.delegated[a.CallID]; started {
				obs[i].content, obs[i].kind = delegationObservation(a, fin)
				continue
			}
		}
		if i < len(c.decisions) {
			if d := c.decisions[i].Decision; d.Outcome == policy.Deny {
				obs[i].content, obs[i].kind = denialObservation(d)
				continue
			}
		}
		pending = append(pending, r.gateAction(ctx, a))
		at = append(at, i)
	}
	if len(pending) > 0 {
		if err := r.holdGate(pending); err != nil {
			return err
		}
		acted, err := r.act(ctx, pending)
		if err != nil {
			return err
		}
		for j, i := range at {
			obs[i] = acted[j]
		}
		if t, ok := terminated(pending); ok {
			if err := r.observe(obs); err != nil {
				return err
			}
			return &TerminatedError{Reason: t.Reason}
		}
	}
	if r.progress == nil {
		r.progress = NewProgressTracker(r.agent.Progress)
	}
	if err := r.trackProgress(ctx, r.progress, obs); err != nil {
		return err
	}
	return r.observe(obs)
}

// skipUnfinished settles, before act dispatches them, approved calls that
// an earlier attempt dispatched without a result (same iteration, same call
// id: a pre-hydration done again, a model that proposes the same call at
// the same point): those their tool's on_resume does not run again get
// their observation here and are left out. It returns the calls to run.
func (r *run) skipUnfinished(ctx context.Context, calls []policy.Approved, callIdx []int, obs []observation) ([]policy.Approved, []int, error) {
	keep, keepIdx := calls[:0:0], callIdx[:0:0]
	for j, c := range calls {
		a := c.Action()
		key := builtins.IdempotencyKey(r.id, r.iter, a.CallID)
		if _, ok := r.interrupted.unfinished[key]; ok {
			rerun, note, err := r.settleUnfinished(ctx, a, key)
			if err != nil {
				return nil, nil, err
			}
			if !rerun {
				obs[callIdx[j]].content, obs[callIdx[j]].kind = note, obsError
				continue
			}
		}
		keep, keepIdx = append(keep, c), append(keepIdx, callIdx[j])
	}
	return keep, keepIdx, nil
}

// settleUnfinished decides, by the tool's on_resume, whether a call that
// was dispatched before the crash and has no result runs again, and
// journals the decision (tool_outcome_unknown). When it does not, note is
// the observation the model gets instead of a result.
func (r *run) settleUnfinished(ctx context.Context, a policy.Action, key string) (rerun bool, note string, err error) {
	call := r.interrupted.unfinished[key]
	delete(r.interrupted.unfinished, key)
	data := journal.ToolOutcomeUnknownData{CallID: a.CallID, Tool: a.Tool, Arguments: call.Arguments, IdempotencyKey: key, OnResume: r.onResume(a.Tool)}
	switch data.OnResume {
	case "retry":
		data.Retried = true
	case "ask":
		data.Retried, data.Reason, err = r.askRerun(ctx, a)
		if err != nil {
			return false, "", err
		}
	default:
		data.Reason = `on_resume = "report"`
	}
	if err := r.hold(journal.ToolOutcomeUnknown, data); err != nil {
		return false, "", err
	}
	if data.Retried {
		return true, "", nil
	}
	return false, unknownNote(a.Tool, data.Reason), nil
}

// askRerun puts "run it again?" to the approver. No approver, no answer or
// a no keeps the call from running; only a failure to journal is an error.
func (r *run) askRerun(ctx context.Context, a policy.Action) (bool, string, error) {
	reason := fmt.Sprintf("%s was dispatched before symbi stopped and its outcome is unknown; run it again?", a)
	if err := r.record(journal.ApprovalRequested, journal.ApprovalRequestedData{CallID: a.CallID, Tool: a.Tool, Arguments: a.Arguments, Reason: reason}); err != nil {
		return false, "", fmt.Errorf("journal: %w", err)
	}
	if r.e.opts.Approver == nil {
		d, _ := r.recordApproval(a, policy.ApprovalRecord{}, ErrNoApprover)
		return false, d.Reason, nil
	}
	rec, err := r.e.opts.Approver.Approve(ctx, policy.Request{RunID: r.id, Agent: r.name, Action: a, Reason: reason})
	rec = plainAnswer(rec)
	d, _ := r.recordApproval(a, rec, err)
	if err != nil && ctx.Err() != nil {
		return false, "", ctx.Err()
	}
	if err != nil || d.Outcome == policy.Deny {
		why := "a person declined to run it again"
		if d.Reason != "" {
			why += ": " + d.Reason
		}
		return false, why, nil
	}
	return true, "", nil
}

// onResume is the tool's on_resume: its block's, else the default of its
// effect (an MCP server's tool, or a plan saved before the attribute).
func (r *run) onResume(tool string) string {
	if t := r.e.plan.Tool("tool." + tool); t != nil && t.OnResume != "" {
		return t.OnResume
	}
	if info, ok := r.tools.info[tool]; ok {
		return plan.DefaultOnResume(info.Effect)
	}
	return plan.DefaultOnResume("")
}

// unknownNote is the observation of a call that was not run again.
func unknownNote(tool, reason string) string {
	msg := fmt.Sprintf("[outcome unknown] %s was started before the run was interrupted and no result was recorded; it was not run again", tool)
	if reason != "" {
		msg += " (" + reason + ")"
	}
	return msg + ". Check whether it took effect before you repeat it."
}

// resultObservation is the observation a journalled tool_result stands
// for: the output, or the failure with its kind first, as failureText
// writes it.
func resultObservation(d journal.ToolResultData) (string, string) {
	if d.Error == "" && d.ErrorKind == "" {
		return d.Output, obsResult
	}
	msg := strings.TrimPrefix(d.Error, d.Tool+": ")
	msg = strings.TrimPrefix(msg, d.ErrorKind+": ")
	return fmt.Sprintf("[tool failed: %s] %s", d.ErrorKind, msg), obsError
}

// delegationObservation is what a delegation of the interrupted attempt
// left: its answer, its failure, or, when it never finished, that it is
// not run again (a sub-run may act on the world as much as a tool).
func delegationObservation(a policy.Action, fin *journal.DelegationFinishedData) (string, string) {
	switch {
	case fin == nil:
		return fmt.Sprintf("[outcome unknown] the delegation to %s was interrupted before it finished; it was not run again. Check what it did before you delegate it again.", a.Target), obsError
	case fin.Reason == string(Completed):
		return fin.Answer, obsResult
	case fin.Error != "":
		return fmt.Sprintf("[delegation failed] %s: %s", a.Target, fin.Error), obsError
	}
	return fmt.Sprintf("[delegation failed] %s ended with %s", a.Target, fin.Reason), obsError
}

// denialObservation is the note a journalled denial stands for: the
// engine's own checks write their note as the reason; a policy's or a
// person's reason is prefixed as gated.refuse does.
func denialObservation(d policy.Decision) (string, string) {
	if d.Engine == "engine" && strings.HasPrefix(d.Reason, "[") {
		if strings.HasPrefix(d.Reason, "[invalid arguments]") || strings.HasPrefix(d.Reason, "[unknown tool]") {
			return d.Reason, obsError
		}
		return d.Reason, obsDenied
	}
	return denialText(d.Reason), obsDenied
}
