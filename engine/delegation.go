package engine

import (
	"context"
	"errors"

	"github.com/symbi-dev/symbi/budget"
)

// DelegationRun is one delegation as a value that crosses to where a
// durable runtime runs it (Runtime.Delegate): the agent and its task, the
// depth and ancestors it runs at, the caller's side-effect mode, its run
// id, and the share of the caller's budget it runs under
// (budget.Reservation.Share: the caller's limits, counted from where the
// caller stood, as a local delegation shares the caller's accountant).
type DelegationRun struct {
	Agent       string           `json:"agent"`
	Task        string           `json:"task"`
	Depth       int              `json:"depth"`
	Ancestors   []string         `json:"ancestors,omitempty"`
	SideEffects string           `json:"side_effects,omitempty"`
	RunID       string           `json:"run_id"`
	Allowance   budget.Allowance `json:"allowance"`
}

// DelegationOutcome is how a delegation ended: its answer and termination,
// its usage as reported (Usage) and as its share's accountant counted it
// (Stage, what the caller settles its reservation with), and the budget
// error that stopped it, if one did, in the caller's terms (Exceeded), for
// the caller to take as its own as a shared accountant would have.
type DelegationOutcome struct {
	Answer      string           `json:"answer,omitempty"`
	Termination CandidateEnd     `json:"termination"`
	Usage       budget.Amount    `json:"usage"`
	Stage       budget.Usage     `json:"stage"`
	Iterations  int              `json:"iterations"`
	Exceeded    *budget.Exceeded `json:"exceeded,omitempty"`
}

// Result is the delegation's run as a Result: its budget error, when a
// limit stopped it, as the *budget.Exceeded it was.
func (o DelegationOutcome) Result() *Result {
	t := Termination{Reason: o.Termination.Reason, Limit: o.Termination.Limit, Detail: o.Termination.Detail}
	switch {
	case o.Exceeded != nil:
		t.Err = o.Exceeded
	case o.Termination.Error != "":
		t.Err = errors.New(o.Termination.Error)
	}
	return &Result{Answer: o.Answer, Termination: t, Usage: o.Usage, Iterations: o.Iterations}
}

// RunDelegation runs one delegation under its share of the caller's
// budget: what Runtime.Delegate runs where it carries the delegation (a
// child workflow), on an engine built from the same plan with the same
// runtime seams. The error is non-nil only when the delegation could not
// start (an agent the plan does not have).
func (e *Engine) RunDelegation(ctx context.Context, d DelegationRun) (DelegationOutcome, error) {
	acct := d.Allowance.Accountant(e.stageClock()...)
	res, err := e.Run(ctx, d.Agent, d.Task, RunOptions{
		Budget:      acct,
		Depth:       d.Depth,
		Ancestors:   d.Ancestors,
		SideEffects: d.SideEffects,
		NoJournal:   true,
		Quiet:       true,
		RunID:       d.RunID,
	})
	if err != nil {
		return DelegationOutcome{}, err
	}
	out := DelegationOutcome{
		Answer: res.Answer, Usage: res.Usage, Iterations: res.Iterations,
		Termination: CandidateEnd{Reason: res.Termination.Reason, Limit: res.Termination.Limit, Detail: res.Termination.Detail},
		Stage:       acct.Usage(),
	}
	if err := res.Termination.Err; err != nil {
		out.Termination.Error = err.Error()
	}
	var ex *budget.Exceeded
	if errors.As(acct.Err(), &ex) {
		out.Exceeded = ex
	}
	return out, nil
}

// delegateElsewhere runs a delegation through the runtime (Runtime.Delegate)
// under a share of this run's budget reserved for it, and settles the
// share with what it used, as a local delegation's shared accountant
// would have counted it.
func (r *run) delegateElsewhere(ctx context.Context, agent, task string, sub RunOptions) (*Result, error) {
	stage, err := r.acct.ReserveStage(budget.Usage{})
	if err != nil {
		var ex *budget.Exceeded
		if errors.As(err, &ex) {
			// The budget is spent: the delegation would stop at once, and
			// this run with it.
			return &Result{Termination: exceeded(ex, err)}, nil
		}
		return nil, err
	}
	out, err := r.e.opts.Runtime.Delegate(ctx, DelegationRun{
		Agent: agent, Task: task, Depth: sub.Depth, Ancestors: sub.Ancestors,
		SideEffects: sub.SideEffects, RunID: sub.RunID, Allowance: stage.Share(),
	})
	if err != nil {
		stage.Release()
		return nil, err
	}
	// A limit passed here is this run's error from now on, as a shared
	// accountant's would be; the delegation's termination says so too.
	_ = stage.SettleShare(out.Stage, out.Exceeded)
	return out.Result(), nil
}
