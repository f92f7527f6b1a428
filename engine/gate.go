package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// gated is one action after the gate: either approved (and then approved
// is the only thing act will take) or refused with a note for the model.
type gated struct {
	action   policy.Action
	raw      json.RawMessage // the model's arguments, when canonicalising changed them
	approved policy.Approved
	ok       bool
	kind     string // when refused: obsDenied or obsInvalid
	note     string // when refused: the observation the model sees
	decision policy.Decision
	trail    []policy.Decision
	shadow   []policy.Decision // the shadow policies' decisions, never enforced
	// modelArgs and editedBy: a person approved other arguments than the
	// model's (action holds theirs, gated again).
	modelArgs json.RawMessage
	editedBy  string
}

// gateAction decides one action: known tool, side-effect mode, schema,
// canonical path arguments, then the agent's policies in order, then a person when a policy asks or
// the tool requires approval. It never returns an error: anything that goes
// wrong is a refusal (fail closed).
func (r *run) gateAction(ctx context.Context, a policy.Action) gated {
	ctx, end := r.gateSpan(ctx, a)
	g, v := r.decide(ctx, a)
	if v.Ask {
		ans, ok := r.standingAnswer(v)
		if !ok {
			ans = r.awaitAsk(ctx, v, r.requestAsk(v), &g)
		}
		g = r.answered(g, ans)
	}
	end(g)
	return g
}

// gateSpan starts what telemetry keeps of one gate decision (its span,
// its metrics, its decision-log line); end, called with the decision once
// it is made (a person's included), records them. Without telemetry or a
// decision log it costs nothing.
func (r *run) gateSpan(ctx context.Context, a policy.Action) (context.Context, func(gated)) {
	if r.e.inst.tracer == nil && !r.e.inst.metrics && r.e.inst.decisions == nil {
		return ctx, func(gated) {}
	}
	began := time.Now()
	ctx, span := r.startGate(ctx, a)
	return ctx, func(g gated) { r.endGate(span, g, time.Since(began)) }
}

// decide is gateAction up to the person: the prechecks and the policies.
// A verdict that asks a person comes back with Ask set and g undecided.
func (r *run) decide(ctx context.Context, a policy.Action) (gated, policy.Verdict) {
	raw := a.Arguments
	if note, kind, ok := r.precheck(&a); !ok {
		return gated{action: a, kind: kind, note: note, decision: policy.Decision{Outcome: policy.Deny, Reason: note, Engine: "engine"}}, policy.Verdict{}
	}
	v := r.chain.Gate(ctx, r.policyInput(a))
	g := gated{action: a, raw: changed(raw, a.Arguments), decision: v.Decision, trail: v.Decisions, shadow: v.Shadow}
	if v.Ask {
		return g, v
	}
	if !v.Approved.Valid() {
		return g.refuse(v.Decision.Reason), v
	}
	g.approved, g.ok = v.Approved, true
	return g, v
}

// personAnswer is a person's answer to an ask: the approved action, or none,
// and the decision for the journal.
type personAnswer struct {
	approved policy.Approved
	decision policy.Decision
	note     string // when not empty, the model's observation of a refusal
}

// answered is g once a person answered its ask.
func (r *run) answered(g gated, a personAnswer) gated {
	g.trail = append(g.trail, a.decision)
	if !a.approved.Valid() {
		g = g.refuse(a.decision.Reason)
		if a.note != "" {
			g.note = a.note
		}
		if a.decision.Engine != "person" {
			g.decision = a.decision // the edited arguments' own gate denied them
		}
		return g
	}
	g.approved, g.ok, g.decision = a.approved, true, a.decision
	return g
}

// standingAnswer answers an ask from a rule a person remembered earlier in
// the run, when one covers it: nobody is asked, nothing is requested.
func (r *run) standingAnswer(v policy.Verdict) (personAnswer, bool) {
	approved, d, ok := r.standingApproval(v)
	return personAnswer{approved: approved, decision: d}, ok
}

// decideAll gates the actions of one model turn. Every policy decides
// first; then the actions a policy asks a person about are asked together:
// each question is journalled (approval_requested) in the order the model
// proposed the actions, and an approver that holds several requests open
// (policy.ConcurrentApprover: the file queue, where `symbi approve` lists
// them all) gets them all at once and each answer is taken as it comes,
// whatever order people decide them in; the terminal, which asks one
// question at a time, asks them in turn. Each answer decides its action
// alone.
func (r *run) decideAll(ctx context.Context, out []gated, actions []policy.Action, skip []bool) {
	var asks []int
	verdicts := make([]policy.Verdict, len(actions))
	ends := make([]func(gated), len(actions))
	ctxs := make([]context.Context, len(actions))
	for i, a := range actions {
		if skip[i] {
			continue
		}
		ctxs[i], ends[i] = r.gateSpan(ctx, a)
		out[i], verdicts[i] = r.decide(ctxs[i], a)
		if verdicts[i].Ask {
			asks = append(asks, i)
		} else {
			ends[i](out[i])
		}
	}
	if len(asks) == 0 {
		return
	}
	// A rule a person remembered earlier in the run answers what it
	// covers; the rest are asked.
	journalled := make([]error, len(actions))
	pending := asks[:0]
	for _, i := range asks {
		if ans, ok := r.standingAnswer(verdicts[i]); ok {
			out[i] = r.answered(out[i], ans)
			ends[i](out[i])
			continue
		}
		pending = append(pending, i)
		journalled[i] = r.requestAsk(verdicts[i])
	}
	ask := func(i int) {
		ans := r.awaitAsk(ctxs[i], verdicts[i], journalled[i], &out[i])
		out[i] = r.answered(out[i], ans)
		ends[i](out[i])
	}
	ca, concurrent := r.e.opts.Approver.(policy.ConcurrentApprover)
	if !concurrent || !ca.AsksConcurrently() || len(pending) < 2 {
		for _, i := range pending {
			ask(i)
		}
		return
	}
	var wg sync.WaitGroup
	for _, i := range pending {
		wg.Go(func() { ask(i) })
	}
	wg.Wait()
}

func (g gated) refuse(reason string) gated {
	g.ok = false
	g.approved = policy.Approved{}
	g.kind = obsDenied
	g.note = denialText(reason)
	if g.decision.Outcome != policy.Deny {
		g.decision = policy.Decision{Outcome: policy.Deny, Reason: reason, Engine: "person"}
	}
	return g
}

// precheck refuses what no policy should even see: an unknown tool, a call
// the side-effect mode forbids, arguments that do not fit the schema, a
// path outside the workspace or a protected one, a delegation past the
// depth limit or into a cycle, a terminate without a reason. It puts a tool
// call's path arguments in canonical form, in place: that is the form the
// policies decide on and the executor runs with.
func (r *run) precheck(a *policy.Action) (note, kind string, ok bool) {
	switch a.Type {
	case policy.ToolCall:
		info, known := r.tools.info[a.Tool]
		if !known {
			return fmt.Sprintf("[unknown tool] %q is not one of this agent's tools (%s)", a.Tool, strings.Join(r.toolNames(), ", ")), obsInvalid, false
		}
		switch r.ro.SideEffects {
		case SideEffectsIsolate:
			return "[side effects blocked] tool calls are not allowed in this run", obsDenied, false
		case SideEffectsReadOnly:
			if !info.ReadOnly() {
				return fmt.Sprintf("[side effects blocked] %s has effect %q; this run may only read", a.Tool, info.Effect), obsDenied, false
			}
		}
		if err := r.tools.box.Validate(a.Tool, a.Arguments); err != nil {
			var f *builtins.Failure
			msg := err.Error()
			if errors.As(err, &f) && f.Err != nil {
				msg = f.Err.Error()
			}
			return fmt.Sprintf("[invalid arguments] %s: %s", a.Tool, msg), obsInvalid, false
		}
		if note, kind, ok := r.canonical(a); !ok {
			return note, kind, false
		}
	case policy.Delegate:
		if r.ro.SideEffects == SideEffectsIsolate {
			return "[side effects blocked] delegation is not allowed in this run", obsDenied, false
		}
		target := "agent." + a.Target
		allowed := false
		for _, d := range r.agent.Delegates {
			allowed = allowed || d == target
		}
		if !allowed || a.Task == "" {
			return fmt.Sprintf("[invalid arguments] delegate: target must be one of %s and task must not be empty", strings.Join(trimAll(r.agent.Delegates, "agent."), ", ")), obsInvalid, false
		}
		if max := r.agent.Loop.MaxDelegationDepth; r.ro.Depth+1 > max {
			return fmt.Sprintf("[delegation refused] depth %d would exceed max_delegation_depth %d", r.ro.Depth+1, max), obsDenied, false
		}
		if target == r.agent.Address || containsString(r.ro.Ancestors, target) {
			chain := append(append([]string{}, r.ro.Ancestors...), r.agent.Address, target)
			return fmt.Sprintf("[delegation refused] cycle: %s", strings.Join(trimAll(chain, "agent."), " -> ")), obsDenied, false
		}
	case policy.Terminate:
		if strings.TrimSpace(a.Reason) == "" {
			return fmt.Sprintf("[invalid arguments] %s: reason must be a non-empty string", plan.TerminateTool), obsInvalid, false
		}
	}
	return "", "", true
}

// canonical puts a tool call's path arguments in the one form the
// policies decide on and the executor runs with (builtins.Toolbox.Canonical):
// "notes/../secret.txt", "./secret.txt", the absolute path and a link to it
// are all "secret.txt" to every policy. A path outside the workspace is
// invalid; one in the state directory or among the configuration's own
// files is refused whatever the policies say.
func (r *run) canonical(a *policy.Action) (note, kind string, ok bool) {
	args, err := r.tools.box.Canonical(a.Tool, a.Arguments)
	if err == nil && !bytes.Equal(args, a.Arguments) {
		// The schema decides on what will run, too.
		err = r.tools.box.Validate(a.Tool, args)
	}
	if err != nil {
		msg := err.Error()
		var f *builtins.Failure
		if errors.As(err, &f) && f.Err != nil {
			msg = f.Err.Error()
		}
		if errors.Is(err, builtins.ErrProtectedPath) {
			return fmt.Sprintf("[protected path] %s: %s", a.Tool, msg), obsDenied, false
		}
		return fmt.Sprintf("[invalid arguments] %s: %s", a.Tool, msg), obsInvalid, false
	}
	a.Arguments = args
	return "", "", true
}

// changed returns the model's arguments when the canonical form differs
// from them, for the journal; nil when they were canonical already.
func changed(raw, canonical json.RawMessage) json.RawMessage {
	if bytes.Equal(raw, canonical) {
		return nil
	}
	return raw
}

// validateDecided is the chain's check of arguments a policy's modify
// decision wrote: they must fit the tool's schema and already be canonical,
// since no policy after it, and no person asked, would see them otherwise.
func validateDecided(box *builtins.Toolbox) func(tool string, args json.RawMessage) error {
	return func(tool string, args json.RawMessage) error {
		if err := box.Validate(tool, args); err != nil {
			return err
		}
		c, err := box.Canonical(tool, args)
		if err != nil {
			return err
		}
		if !bytes.Equal(c, args) {
			return fmt.Errorf("the path arguments are not in canonical form (%s); write them as %s", args, c)
		}
		return nil
	}
}

func (r *run) toolNames() []string {
	out := make([]string, 0, len(r.tools.specs))
	for _, s := range r.tools.specs {
		out = append(out, s.Name)
	}
	return out
}

// policyInput is what the policies see. Usage comes from the accountant,
// so a policy can refuse on spend; the rest is the run's fixed input.
func (r *run) policyInput(a policy.Action) policy.Input {
	in := r.input0
	in.Action = a
	in.Run.Iteration = r.iter
	in.Run.Usage = policy.Usage(usageOf(r.acct))
	return in
}

// fixedInput is the part of every policy input that does not change during
// a run, built once rather than per gated action: policies only read it.
func (r *run) fixedInput() policy.Input {
	model := r.agent.Model
	if m := r.e.plan.Model(model); m != nil && m.Name != "" {
		model = strings.TrimPrefix(m.Address, "model.")
	} else {
		model = strings.TrimPrefix(strings.TrimPrefix(model, "model."), "router.")
	}
	pctx := r.e.opts.PolicyContext
	if pctx == nil {
		pctx = map[string]any{}
	}
	return policy.Input{
		Agent: policy.AgentInfo{Name: r.name, Model: model, DelegationDepth: r.ro.Depth},
		Run: policy.RunInfo{
			ID:     r.id,
			Budget: policy.BudgetLimits(r.e.plan.Budget(r.agent.Budget)),
		},
		Context: pctx,
	}
}

// requestAsk journals the question of a verdict that needs a person
// (approval_requested); the error says it could not be.
func (r *run) requestAsk(v policy.Verdict) error {
	a := v.Action
	return r.record(journal.ApprovalRequested, journal.ApprovalRequestedData{CallID: a.CallID, Tool: actionTarget(a), Arguments: a.Arguments, ArgumentsDigest: policy.ArgumentsDigest(a), Reason: v.Decision.Reason})
}

// awaitAsk puts a verdict that needs a person before the approver, once
// its question is journalled (journalled is requestAsk's error), and
// journals the answer (resolveAsk). It may run beside the awaitAsk of
// another action of the same turn; g is its own action's.
func (r *run) awaitAsk(ctx context.Context, v policy.Verdict, journalled error, g *gated) personAnswer {
	approved, d, note := r.resolveAsk(ctx, v, journalled, g)
	return personAnswer{approved: approved, decision: d, note: note}
}

// maxEdits bounds how often a person's edited arguments may be refused
// (they fail the tool's schema) before the action is denied.
const maxEdits = 3

// resolveAsk puts a verdict that needs a person before the approver and
// journals the answer (the first question is journalled already:
// journalled is requestAsk's error); the note, when not empty, is the
// model's observation of a refusal. No approver, an error or a timeout is
// a denial, each with its code. A person's edited arguments are checked as
// the model's are (schema, canonical form) and go through the gate again:
// a deny there is final, an ask is answered by the person's approval of
// exactly those arguments; arguments that fail the schema are asked about
// again, with why (a new approval_requested).
func (r *run) resolveAsk(ctx context.Context, v policy.Verdict, journalled error, g *gated) (policy.Approved, policy.Decision, string) {
	a := v.Action
	reason := ""
	for try := 1; ; try++ {
		err := journalled
		if try > 1 {
			err = r.record(journal.ApprovalRequested, journal.ApprovalRequestedData{CallID: a.CallID, Tool: actionTarget(a), Arguments: a.Arguments, ArgumentsDigest: policy.ArgumentsDigest(a), Reason: reason})
		}
		if err != nil {
			// An approval with no record is no audit trail: fail closed.
			return policy.Approved{}, policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: "the approval request could not be journalled: " + err.Error()}, ""
		}
		var approved policy.Approved
		var rec policy.ApprovalRecord
		if r.e.opts.Approver == nil {
			err = ErrNoApprover
		} else {
			approved, rec, err = r.chain.Resolve(ctx, v, r.e.opts.Approver, r.approvalRequest(a, reason, 0))
		}
		d, code := r.recordApproval(a, rec, err)
		if d.Outcome == policy.Deny {
			return policy.Approved{}, d, approvalNote(code, d.Reason)
		}
		if len(rec.Arguments) == 0 {
			r.remember(approved.Action(), rec)
			return approved, d, ""
		}
		// Edited: the person's arguments, checked and gated like the model's.
		edited := a
		edited.Arguments = rec.Arguments
		if note, _, ok := r.precheck(&edited); !ok {
			if try >= maxEdits {
				d := policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: fmt.Sprintf("the arguments %s approved were refused %d times: %s", rec.By, try, note)}
				return policy.Approved{}, d, approvalNote(journal.DeniedByApprover, d.Reason)
			}
			reason = fmt.Sprintf("the arguments %s approved were refused (%s): approve the model's, give others, or deny", rec.By, note)
			continue
		}
		// The canonical form of what the person wrote (a path made
		// workspace-relative) is what they approved.
		rec.Arguments = edited.Arguments
		v2 := r.chain.Gate(ctx, r.policyInput(edited))
		g.trail = append(g.trail, v2.Decisions...)
		g.modelArgs, g.editedBy, g.action = a.Arguments, rec.By, v2.Action
		if v2.Decision.Outcome == policy.Deny || !v2.Approved.Valid() && !v2.Ask {
			d := v2.Decision
			d.Reason = fmt.Sprintf("the arguments %s approved were denied: %s", rec.By, d.Reason)
			return policy.Approved{}, d, ""
		}
		approved, err = r.chain.ApproveEdited(v2, rec)
		if err != nil {
			// A policy changed the person's arguments on the way: they
			// have not seen these, so they are asked about them.
			if try >= maxEdits {
				d := policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: err.Error()}
				return policy.Approved{}, d, approvalNote(journal.DeniedByApprover, d.Reason)
			}
			v, a, reason = v2, v2.Action, "the policies changed the arguments you approved; approve these, or deny"
			continue
		}
		r.remember(approved.Action(), rec)
		return approved, d, ""
	}
}

// approvalNote is the model's observation of an action a person did not
// approve: the code first, so the model can tell nobody there from a no.
func approvalNote(code, reason string) string {
	if code == "" {
		return ""
	}
	return fmt.Sprintf("[not approved: %s] %s", code, reason)
}

// standing is a rule a person said to remember, and who.
type standing struct {
	rule policy.Standing
	by   string
}

// standingApproval answers an ask from a rule a person remembered earlier
// in the run, when one covers the action; the answer is journalled like a
// person's, via "standing".
func (r *run) standingApproval(v policy.Verdict) (policy.Approved, policy.Decision, bool) {
	now := r.e.opts.Now()
	r.approvalMu.Lock()
	rules := slices.Clone(r.standing)
	r.approvalMu.Unlock()
	for _, s := range rules {
		if !s.rule.Matches(v.Action, now) {
			continue
		}
		rec := policy.ApprovalRecord{Approved: true, By: s.by, At: now, Via: "standing", Reason: "approved by the rule " + s.by + " said to remember: " + s.rule.String()}
		approved, err := r.chain.ApproveStanding(v, s.rule, rec, now)
		if err != nil {
			continue
		}
		a := v.Action
		data := journal.ApprovalDecidedData{CallID: a.CallID, Tool: actionTarget(a), Approved: true, By: s.by, Reason: rec.Reason, Via: "standing", Rule: s.rule.String()}
		if err := r.record(journal.ApprovalDecided, data); err != nil {
			return policy.Approved{}, policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: "the approval could not be journalled: " + err.Error()}, true
		}
		r.approvalMu.Lock()
		r.approvals.Add(data)
		r.approvalMu.Unlock()
		return approved, rec.PersonDecision(), true
	}
	return policy.Approved{}, policy.Decision{}, false
}

// remember keeps the rule a person confirmed with their approval of a,
// and journals it; one that does not cover a (a hand-made decision) is
// not kept.
func (r *run) remember(a policy.Action, rec policy.ApprovalRecord) {
	if rec.Remember == nil || !rec.Approved {
		return
	}
	s, err := policy.NewStanding(a, rec.Remember.Widen, rec.Remember.Until)
	if err != nil {
		_ = r.record(journal.ApprovalRejected, journal.ApprovalRejectedData{CallID: a.CallID, Tool: actionTarget(a), RequestID: rec.ID, Reason: "the rule to remember was refused: " + err.Error(), Approved: true, By: rec.By})
		return
	}
	if err := r.record(journal.ApprovalRemembered, journal.ApprovalRememberedData{CallID: a.CallID, Tool: a.Tool, Rule: s.String(), Standing: s, By: rec.By}); err != nil {
		return // a rule with no record is not kept
	}
	r.approvalMu.Lock()
	r.standing = append(r.standing, standing{rule: s, by: rec.By})
	r.approvalMu.Unlock()
}

// escalate asks a person whether a failed call should run again (the
// escalate recovery strategy). A rejection is (false, nil); a failure to
// get an answer is an error, which passes the chain on.
func (r *run) escalate(ctx context.Context, a policy.Action, queue string, timeout time.Duration, failure error) (bool, error) {
	reason := fmt.Sprintf("%s failed (%v); run it again?", a, failure)
	if err := r.record(journal.ApprovalRequested, journal.ApprovalRequestedData{CallID: a.CallID, Tool: actionTarget(a), Arguments: a.Arguments, ArgumentsDigest: policy.ArgumentsDigest(a), Queue: queue, Reason: reason}); err != nil {
		return false, err
	}
	if r.e.opts.Approver == nil {
		r.recordApproval(a, policy.ApprovalRecord{}, ErrNoApprover)
		return false, ErrNoApprover
	}
	rec, err := r.e.opts.Approver.Approve(ctx, r.approvalRequest(a, reason, timeout))
	if err != nil && errors.Is(context.Cause(ctx), builtins.ErrEscalationTimeout) {
		// The question's deadline and the approver's own timeout are the
		// same instant; whichever fired, nobody answered in time.
		rec, err = policy.TimeoutRecord("", timeout, r.e.opts.Now()), nil
	}
	rec = plainAnswer(rec)
	d, _ := r.recordApproval(a, rec, err)
	if err != nil {
		return false, err
	}
	if rec.Approved && d.Outcome == policy.Deny {
		return false, errors.New(d.Reason) // the answer could not be journalled
	}
	if !rec.Approved && rec.Via == "timeout" {
		return false, fmt.Errorf("escalation to %s timed out", queue)
	}
	return rec.Approved, nil
}

// approvalRequest is the question about a of this run. What a person is
// shown (the prompt, the request file in the queue) passes through the
// run's redactor; a decision from the queue that the approver refuses is
// journalled as approval_rejected, and the approver goes on waiting.
func (r *run) approvalRequest(a policy.Action, reason string, timeout time.Duration) policy.Request {
	return policy.Request{
		RunID: r.id, Agent: r.name, Action: a, Reason: reason, Timeout: timeout,
		Redact: func(b json.RawMessage) json.RawMessage { return r.e.secrets.JSON(b) },
		Rejected: func(x policy.Rejection) {
			// A failure to journal it changes nothing: the decision is
			// refused either way.
			_ = r.record(journal.ApprovalRejected, journal.ApprovalRejectedData{
				CallID: a.CallID, Tool: actionTarget(a), RequestID: x.RequestID,
				Reason: x.Err.Error(), Approved: x.Claimed.Approved, By: x.Claimed.By,
			})
		},
	}
}

// recordApproval journals a person's answer (or the failure to get one)
// and returns it as a decision, with the code of a denial.
func (r *run) recordApproval(a policy.Action, rec policy.ApprovalRecord, err error) (policy.Decision, string) {
	data := journal.ApprovalDecidedData{CallID: a.CallID, Tool: actionTarget(a), Approved: rec.Approved, By: rec.By, Reason: rec.Reason, TimedOut: rec.Via == "timeout", Via: rec.Via}
	if len(rec.Arguments) > 0 {
		data.Arguments, data.ArgumentsDigest = rec.Arguments, policy.ArgumentsDigest(policy.Action{Type: policy.ToolCall, Arguments: rec.Arguments})
	}
	d := rec.PersonDecision()
	switch {
	case errors.Is(err, ErrNoApprover):
		data.Reason = "needs a person's approval, and nobody can be asked in this run (no terminal and no approval queue: --non-interactive, CI or --approver none; --approver queue asks through symbi approve)"
		data.Code, data.Via = journal.NoApprover, ""
		d = policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: data.Reason}
	case err != nil:
		data.Reason = "asking for approval failed: " + err.Error()
		data.Code = journal.ApprovalError
		d = policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: data.Reason}
	case rec.Via == "timeout":
		data.Code = journal.ApprovalTimeout
	case !rec.Approved:
		data.Code = journal.DeniedByApprover
	}
	if jerr := r.record(journal.ApprovalDecided, data); jerr != nil && d.Outcome != policy.Deny {
		// A person's approval that left no record is not acted on.
		d = policy.Decision{Outcome: policy.Deny, Engine: "person", Reason: "the approval could not be journalled: " + jerr.Error()}
		data.Code = journal.ApprovalError
	}
	r.approvalMu.Lock()
	r.approvals.Add(data)
	r.approvalMu.Unlock()
	return d, data.Code
}

// plainAnswer is a yes or a no to a question that is not a gated call's
// (run a failed call again?): edited arguments or a rule to remember do not
// apply there, and an approval that brings them is not taken.
func plainAnswer(rec policy.ApprovalRecord) policy.ApprovalRecord {
	if rec.Approved && (len(rec.Arguments) > 0 || rec.Remember != nil) {
		rec.Approved, rec.Arguments, rec.Remember = false, nil, nil
		rec.Reason = "edited arguments and rules to remember apply to a call being decided, not to running one again: answer yes or no"
	}
	return rec
}

// ErrNoApprover is the cause of a denial that needed a person when the run
// has no way to ask one.
var ErrNoApprover = errors.New("no approver")

// recordGate journals the gate's decisions for one iteration. It is on
// disk before anything is dispatched.
func (r *run) recordGate(gs []gated) error {
	return r.recordDecisions(gs, false)
}

// holdGate is recordGate for decisions on tool calls, which are held until
// the calls are dispatched (see hold).
func (r *run) holdGate(gs []gated) error {
	return r.recordDecisions(gs, true)
}

func (r *run) recordDecisions(gs []gated, hold bool) error {
	data := journal.PolicyEvaluatedData{Decisions: make([]journal.GateRecord, len(gs))}
	for i, g := range gs {
		d := g.decision
		if g.ok && d.Outcome != policy.Allow && d.Outcome != policy.Modify {
			d = policy.Decision{Outcome: policy.Allow, Reason: d.Reason, Engine: "person", Policy: d.Policy}
		}
		data.Decisions[i] = journal.GateRecord{Action: g.action, RawArguments: g.raw, Decision: d, Trail: g.trail, Shadow: g.shadow, ModelArguments: g.modelArgs, EditedBy: g.editedBy}
		if !g.ok {
			data.Denied++
		}
		r.shadow = journal.TallyShadow(r.shadow, data.Decisions[i])
	}
	if hold {
		return r.hold(journal.PolicyEvaluated, data)
	}
	return r.mustRecord(journal.PolicyEvaluated, data)
}

func actionTarget(a policy.Action) string {
	switch a.Type {
	case policy.Delegate:
		return "agent." + a.Target
	case policy.Terminate:
		return plan.TerminateTool
	}
	return a.Tool
}

// chain builds (once per engine and agent) the agent's policy chain. Each
// policy engine is prepared once and shared by every agent that lists it.
func (e *Engine) chain(ctx context.Context, a *plan.Agent, tools *agentTools) (*policy.Chain, error) {
	links := make([]policy.Link, 0, len(a.Policies))
	for _, addr := range a.Policies {
		g, err := e.gate(ctx, addr)
		if err != nil {
			return nil, err
		}
		link := policy.Link{Address: addr, Gate: g}
		if p := e.plan.Policy(addr); p != nil {
			link.Version, link.Shadow = policy.Version(*p), p.Mode == plan.PolicyModeShadow
		}
		links = append(links, link)
	}
	c := policy.NewChain(links, a.Loop.OnNoPolicy, validateDecided(tools.box))
	for name, info := range tools.info {
		if info.Approval == "always" {
			c.RequireApproval(name)
		}
	}
	return c, nil
}

func (e *Engine) gate(ctx context.Context, addr string) (policy.Gate, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if g, ok := e.gates[addr]; ok {
		return g, nil
	}
	if e.policies == nil {
		e.policies = policy.NewLoader(e.plan, e.opts.BaseDir)
	}
	g, err := e.policies.Gate(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	e.gates[addr] = g
	return g, nil
}

func trimAll(list []string, prefix string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.TrimPrefix(s, prefix)
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
