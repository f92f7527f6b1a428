package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// Observation kinds.
const (
	obsResult  = "result"
	obsDenied  = "denied"
	obsInvalid = "invalid"
	obsError   = "error"
)

// observation is what one proposed action became, for the next iteration.
type observation struct {
	callID  string
	tool    string
	content string
	kind    string
	// failure is the kind of a failed call's last failure.
	failure builtins.FailureKind
}

// act runs the approved actions of one iteration and returns one
// observation per action, in the order the model proposed them. Tool calls
// run concurrently (max_concurrent_tools, tool_timeout); delegations run
// after them, one after another, each a full sub-run. An approved terminate
// does nothing here: its observation says the run ends, and step ends it
// once the turn's other actions have run. An error here stops the run (a
// budget limit, cancellation, a journal that cannot be written); tool
// failures are observations.
func (r *run) act(ctx context.Context, gs []gated) ([]observation, error) {
	obs := make([]observation, len(gs))
	var calls []policy.Approved
	var callIdx []int
	for i, g := range gs {
		obs[i] = observation{callID: g.action.CallID, tool: actionName(g.action)}
		if !g.ok {
			obs[i].content, obs[i].kind = g.note, g.kind
			if g.kind == obsInvalid {
				obs[i].kind = obsError
			}
			continue
		}
		switch a := g.approved.Action(); a.Type {
		case policy.ToolCall:
			calls = append(calls, g.approved)
			callIdx = append(callIdx, i)
		case policy.Terminate:
			obs[i].content, obs[i].kind = terminateNote(a.Reason), obsResult
		}
	}
	if len(calls) > 0 && r.interrupted != nil && len(r.interrupted.unfinished) > 0 {
		var err error
		if calls, callIdx, err = r.skipUnfinished(ctx, calls, callIdx, obs); err != nil {
			return nil, err
		}
	}
	if len(calls) > 0 {
		// The round first: the results' usage reports tool calls, not
		// rounds, so a round counted for calls that then do not fit shows
		// nowhere. The calls fit together or none is counted, since none of
		// them runs.
		if err := r.acct.ToolRound(); err != nil {
			return nil, err
		}
		if err := r.acct.ReserveToolCalls(len(calls)); err != nil {
			return nil, err
		}
		results, err := r.dispatch(ctx, calls)
		if err != nil {
			return nil, err
		}
		for j, i := range callIdx {
			obs[i] = results[j]
		}
	}
	for i, g := range gs {
		if g.ok && g.editedBy != "" {
			// The model must know its call did not run as it wrote it.
			var args bytes.Buffer
			if json.Compact(&args, g.approved.Action().Arguments) != nil {
				args.Write(g.approved.Action().Arguments)
			}
			obs[i].content = fmt.Sprintf("[ran with arguments edited by %s: %s] %s", g.editedBy, args.Bytes(), obs[i].content)
		}
	}
	for i, g := range gs {
		if g.ok && g.approved.Action().Type == policy.Delegate {
			o, err := r.delegate(ctx, g.approved)
			if err != nil {
				return nil, err
			}
			obs[i] = o
		}
	}
	return obs, ctx.Err()
}

// dispatch sends approved tool calls to the toolbox and runs the recovery
// chain of each call that failed.
func (r *run) dispatch(ctx context.Context, calls []policy.Approved) ([]observation, error) {
	dc := journal.ToolsDispatchedData{Calls: make([]journal.DispatchedCall, len(calls)), Concurrency: r.agent.Loop.MaxConcurrentTools}
	for i, c := range calls {
		a := c.Action()
		dc.Calls[i] = journal.DispatchedCall{CallID: a.CallID, Tool: a.Tool, Arguments: a.Arguments}
	}
	if r.readOnly(calls) {
		// Calls that only read act on nothing outside: their line is held
		// like a decision and written with their results, unless the round
		// runs long enough that the journal should show what it waits on.
		if err := r.hold(journal.ToolsDispatched, dc); err != nil {
			return nil, err
		}
		if r.jw != nil {
			slow := slowReadRound
			if r.e.opts.slowReadRound > 0 {
				slow = r.e.opts.slowReadRound
			}
			if r.slowRound == nil {
				jw := r.jw
				r.slowRound = time.AfterFunc(slow, func() { _ = jw.Flush() })
			} else {
				r.slowRound.Reset(slow)
			}
			defer r.slowRound.Stop()
		}
	} else {
		// A call that may change the world is on disk before it starts.
		if err := r.mustRecord(journal.ToolsDispatched, dc); err != nil {
			return nil, err
		}
		r.wroteAhead = true
	}
	// Each call carries its idempotency key (run, iteration, call id) to
	// the tool, through its retries and fallbacks and a resume alike.
	for _, c := range calls {
		if r.e.opts.Runtime != nil || r.tools.box.TakesIdempotencyKey(c.Action().Tool) {
			ctx = builtins.WithCallScope(ctx, r.id, r.iter)
			break
		}
	}
	outs := r.tools.box.Dispatch(ctx, calls, r.agent.Loop.MaxConcurrentTools, r.agent.Loop.ToolTimeout.Std())
	obs := make([]observation, len(outs))
	for i, o := range outs {
		a := o.Call.Action()
		res, err := o.Result, o.Err
		if err != nil && ctx.Err() == nil {
			// A recovery acts again (a retry, a fallback, a model's
			// second try): what was decided so far goes to disk first.
			if ferr := r.flushJournal(); ferr != nil {
				return nil, ferr
			}
			rctx, span := r.e.startStep(ctx, spanRecover+" "+a.Tool, r.id, attrToolName.String(a.Tool), attrToolCallID.String(a.CallID))
			res, err = r.recover(rctx, o)
			r.e.endStep(span, err)
		}
		data := journal.ToolResultData{CallID: a.CallID, Tool: a.Tool, DurationMS: res.Elapsed.Milliseconds(), Truncated: res.Truncated, OriginalBytes: res.Size, Cached: res.Cached}
		obs[i] = observation{callID: a.CallID, tool: a.Tool}
		if err != nil {
			kind := builtins.KindOf(err)
			data.Error, data.ErrorKind = err.Error(), string(kind)
			obs[i].kind, obs[i].failure = obsError, kind
			obs[i].content = failureText(err)
		} else {
			data.Output = res.Content
			obs[i].kind = obsResult
			obs[i].content = res.Content
			if res.Tool != "" && res.Tool != a.Tool {
				obs[i].content = fmt.Sprintf("[fallback %s] %s", res.Tool, res.Content)
			}
			if note := res.TruncationNote(); note != "" {
				// The model must not take the part it sees for the whole.
				obs[i].content += "\n" + note
			}
		}
		// Every call has ended; the results reach the file with the
		// iteration's observations, before the next model call.
		if err := r.hold(journal.ToolResult, data); err != nil {
			return nil, err
		}
	}
	return obs, ctx.Err()
}

// slowReadRound is how long a round of read-only calls runs before its
// held tools_dispatched line is written anyway.
const slowReadRound = 50 * time.Millisecond

// readOnly reports whether every call is to a tool with effect none or
// read.
func (r *run) readOnly(calls []policy.Approved) bool {
	for _, c := range calls {
		if info, ok := r.tools.info[c.Action().Tool]; !ok || !info.ReadOnly() {
			return false
		}
	}
	return true
}

// failureText is the observation for a failed call: the kind first, so
// the model can tell a timeout from bad arguments.
func failureText(err error) string {
	var f *builtins.Failure
	if errors.As(err, &f) {
		if f.Hint != "" {
			return fmt.Sprintf("[tool failed: %s] %s", f.Kind, f.Hint)
		}
		if f.Err != nil {
			return fmt.Sprintf("[tool failed: %s] %v", f.Kind, f.Err)
		}
		return fmt.Sprintf("[tool failed: %s]", f.Kind)
	}
	return "[tool failed] " + err.Error()
}

func actionName(a policy.Action) string {
	switch a.Type {
	case policy.Delegate:
		return plan.DelegateTool
	case policy.Terminate:
		return plan.TerminateTool
	}
	return a.Tool
}

// childOptions are the options of a run nested in this one (a delegate, an
// evaluator, a plan step) at depth: it shares this run's budget, has this
// agent among its ancestors, keeps its side-effect and journal settings and
// streams nothing to the terminal.
func (r *run) childOptions(depth int) RunOptions {
	return RunOptions{
		Budget:      r.acct,
		Depth:       depth,
		Ancestors:   append(append([]string(nil), r.ro.Ancestors...), r.agent.Address),
		SideEffects: r.ro.SideEffects,
		NoJournal:   r.ro.NoJournal,
		Quiet:       true,
	}
}

// delegate runs the approved delegation as a sub-run of the target agent,
// sharing this run's budget, one level deeper: in this run, or where the
// runtime carries it (Runtime.Delegate), as RUN.dN.
func (r *run) delegate(ctx context.Context, call policy.Approved) (observation, error) {
	a := call.Action()
	o := observation{callID: a.CallID, tool: plan.DelegateTool}
	r.delegations++
	sub := r.childOptions(r.ro.Depth + 1)
	elsewhere := r.e.opts.Runtime != nil && r.e.opts.Runtime.Delegate != nil
	if !sub.NoJournal || elsewhere {
		sub.RunID = fmt.Sprintf("%s.d%d", r.id, r.delegations)
	}
	target := "agent." + a.Target
	if err := r.mustRecord(journal.DelegationStarted, journal.DelegationStartedData{CallID: a.CallID, Target: target, Task: a.Task, Depth: sub.Depth, RunID: sub.RunID}); err != nil {
		return o, err
	}
	start := r.e.opts.Now()
	var res *Result
	var err error
	if elsewhere {
		res, err = r.delegateElsewhere(ctx, target, a.Task, sub)
	} else {
		res, err = r.subRun(ctx, target, a.Task, sub)
	}
	fin := journal.DelegationFinishedData{CallID: a.CallID, Target: target, DurationMS: r.e.opts.Now().Sub(start).Milliseconds()}
	switch {
	case err != nil:
		fin.Reason, fin.Error = string(Failed), err.Error()
		o.kind, o.content = obsError, fmt.Sprintf("[delegation failed] %s: %v", a.Target, err)
	case res.Termination.Reason == Completed:
		fin.Reason, fin.Answer, fin.Usage = string(Completed), res.Answer, res.Usage
		o.kind, o.content = obsResult, res.Answer
	default:
		fin.Reason, fin.Usage = string(res.Termination.Reason), res.Usage
		if res.Termination.Err != nil {
			fin.Error = res.Termination.Err.Error()
		}
		o.kind, o.content = obsError, fmt.Sprintf("[delegation failed] %s ended with %s", a.Target, res.Termination)
	}
	if rerr := r.mustRecord(journal.DelegationFinished, fin); rerr != nil {
		return o, rerr
	}
	if err == nil {
		// The shared budget or the caller's cancellation stop this run too.
		switch res.Termination.Reason {
		case BudgetExceeded, MaxIterations, TimedOut, Cancelled:
			if res.Termination.Err != nil {
				return o, res.Termination.Err
			}
		}
	}
	return o, nil
}

// subRun runs another agent inside this run (delegation, an evaluator, a
// judge): same engine, the options given.
func (r *run) subRun(ctx context.Context, agentAddr, input string, ro RunOptions) (*Result, error) {
	if ro.Budget == nil {
		ro.Budget = r.acct
	}
	return r.e.Run(ctx, agentAddr, input, ro)
}

// recover runs the failed call's recovery chain: the tool's own, else the
// agent's. Fallback tools pass the gate like any call; escalation asks a
// person; each step is journalled.
func (r *run) recover(ctx context.Context, o builtins.Outcome) (builtins.Result, error) {
	a := o.Call.Action()
	addr := r.agent.Loop.Recovery
	if t := r.e.plan.Tool("tool." + a.Tool); t != nil && t.Recovery != "" {
		addr = t.Recovery
	}
	rec := r.e.plan.Recovery(addr)
	if rec == nil {
		return o.Result, o.Err
	}
	return r.tools.box.Recover(ctx, o.Call, o.Err, *rec, builtins.RecoveryHooks{
		Gate: func(ctx context.Context, fallback policy.Action) (policy.Approved, error) {
			fallback.CallID = a.CallID
			if info, ok := r.tools.box.Info(fallback.Tool); ok {
				fallback.Effect, fallback.Tags = info.Effect, info.Tags
			}
			g := r.gateAction(ctx, fallback)
			if err := r.recordGate([]gated{g}); err != nil {
				return policy.Approved{}, err
			}
			if !g.ok {
				return policy.Approved{}, errors.New(strings.TrimPrefix(g.note, "[policy denied] "))
			}
			if err := r.acct.ToolCall(); err != nil {
				return policy.Approved{}, err
			}
			return g.approved, nil
		},
		Escalate: func(ctx context.Context, queue string, timeout time.Duration, failure error) (bool, error) {
			return r.escalate(ctx, a, queue, timeout, failure)
		},
		Event: func(strategy string, attempt int, err error) {
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.AddEvent(eventRecovery, trace.WithAttributes(attrRecoveryStrategy.String(strategy), attrRecoveryAttempt.Int(attempt),
					attrErrorType.String(string(builtins.KindOf(err)))))
			}
			_ = r.record(journal.RecoveryTriggered, journal.RecoveryTriggeredData{
				CallID: a.CallID, Tool: a.Tool, Strategy: strategy, Attempt: attempt,
				Error: errString(err), ErrorKind: string(builtins.KindOf(err)),
			})
		},
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
