package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine/internal/planexec"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// The plan_execute pieces (package engine/internal/planexec), under the
// names the engine has always exported.
type (
	// PlanError says why a plan the model wrote cannot run. Kind is one of
	// the PlanError* constants; test it with errors.As.
	PlanError = planexec.Error
	// StepFailedError is a plan step that failed while the plan could not
	// go on without it.
	StepFailedError = planexec.StepFailedError
)

// The kinds of PlanError.
const (
	PlanErrorInvalid           = planexec.KindInvalid
	PlanErrorEmpty             = planexec.KindEmpty
	PlanErrorDuplicateStep     = planexec.KindDuplicateStep
	PlanErrorMissingID         = planexec.KindMissingID
	PlanErrorUnknownDependency = planexec.KindUnknownDependency
	PlanErrorCycle             = planexec.KindCycle
	PlanErrorTooManySteps      = planexec.KindTooManySteps
)

// ErrStepTimeout is the cause of a step that ran past step_timeout.
var ErrStepTimeout = planexec.ErrStepTimeout

// maxReplans bounds replanning after failed steps (allow_replanning). The
// budget (max_plan_steps, max_model_calls) bounds it too; this keeps a plan
// that fails the same way from replanning until the budget is gone.
const maxReplans = 3

// planExecute asks the model for a plan of steps, runs the steps (each a
// react sub-run of this agent with its tools) as their dependencies finish,
// replans after a failed step when allowed, and ends with one synthesis
// call whose answer is gated like any answer.
func (r *run) planExecute(ctx context.Context) error {
	cfg := r.agent.Plan
	results := map[string]planexec.Result{}
	tracker := NewProgressTracker(r.agent.Progress)
	var order []string // step ids in the order their plans listed them
	steps, err := r.makePlan(ctx, nil, nil)
	if err != nil {
		return err
	}
	for replans := 0; ; replans++ {
		for _, s := range steps {
			order = append(order, s.ID)
		}
		sched := &planexec.Scheduler{
			Parallel:             max(cfg.MaxParallelSteps, 1),
			StepTimeout:          cfg.StepTimeout.Std(),
			ContinueAfterFailure: cfg.ContinueAfterStepFailure,
			Now:                  r.e.opts.Now,
			Inline:               r.e.opts.Runtime != nil,
			WithTimeout:          r.e.withTimeout,
			Before: func(s planexec.Step) error {
				if err := r.acct.PlanStep(); err != nil {
					return err
				}
				return r.mustRecord(journal.StepStarted, journal.StepStartedData{StepID: s.ID, Attempt: replans + 1})
			},
			Run: r.runPlanStep,
			After: func(res planexec.Result) {
				data := journal.StepFinishedData{StepID: res.ID, Status: res.Status, Output: res.Output, DurationMS: res.Elapsed.Milliseconds()}
				if res.Err != nil {
					data.Error = res.Err.Error()
				}
				_ = r.record(journal.StepFinished, data)
			},
		}
		err := sched.Execute(ctx, steps, results)
		var failed *StepFailedError
		if !errors.As(err, &failed) || !cfg.AllowReplanning || replans >= maxReplans || ctx.Err() != nil {
			if err != nil {
				return err
			}
			break
		}
		// Every failure is one key: a plan whose replacement keeps failing
		// the same way is stuck, whatever its steps are called.
		if goOn, err := r.planProgress(ctx, tracker, failed); err != nil {
			return err
		} else if !goOn {
			break // skip: answer from what is done
		}
		if steps, err = r.makePlan(ctx, results, failed); err != nil {
			return err
		}
	}
	return r.synthesize(ctx, order, results)
}

// planProgress applies the progress block to a failed step before a
// replan: true to replan, false to skip replanning and answer from what is
// done, or the error that ends the run (abort, or an escalation a person
// declined).
func (r *run) planProgress(ctx context.Context, tracker *ProgressTracker, failed *StepFailedError) (bool, error) {
	stuck := func() error {
		e := tracker.Stuck(planProgressKey)
		e.Step = failed.Step
		return e
	}
	switch tracker.Observe(planProgressKey, failed.Err.Error()) {
	case ProgressSkip:
		return false, nil
	case ProgressAbort:
		return false, stuck()
	case ProgressEscalate:
		a := policy.Action{Type: policy.Terminate, CallID: "plan-" + failed.Step, Reason: fmt.Sprintf("plan step %s keeps failing the same way", failed.Step)}
		ok, err := r.escalate(ctx, a, "", 0, failed.Err)
		if err != nil || !ok {
			return false, errors.Join(stuck(), err)
		}
	}
	return true, nil
}

// planProgressKey is the progress tracker's key for plan step failures.
const planProgressKey = "plan"

// makePlan asks the model for a plan (or, after a failure, a plan for the
// remaining work) and validates it. An invalid plan is sent back once with
// what is wrong; a second invalid plan ends the run with its *PlanError.
//
// The model is told the most steps it may plan: plan.max_steps, or what
// the budget's max_plan_steps has left when that is less. A plan over
// max_steps is invalid (too_many_steps); one the budget cannot finish is
// sent back the same way, and a second one ends the run with the budget
// error (max_plan_steps, budget_exceeded), as every budget limit does.
// With no step left, no plan is asked for.
func (r *run) makePlan(ctx context.Context, done map[string]planexec.Result, failed *StepFailedError) ([]planexec.Step, error) {
	maxSteps := r.agent.Plan.MaxSteps
	limit, left := maxSteps, r.acct.Remaining().PlanSteps
	if left != budget.Unlimited {
		if left == 0 {
			return nil, r.acct.PlanStepsFit(1)
		}
		if limit <= 0 || int64(limit) > left {
			limit = int(left)
		}
	}
	finished := map[string]bool{}
	for id, res := range done {
		finished[id] = res.Status == planexec.Done
	}
	msgs := []provider.Message{}
	if r.agent.System != "" {
		msgs = append(msgs, provider.Message{Role: provider.System, Content: r.agent.System})
	}
	msgs = append(msgs, provider.Message{Role: provider.User, Content: planexec.Prompt(r.input, limit, r.tools.specs, done, failed)})
	var lastErr error
	for try := 0; try < 2; try++ {
		if err := r.acct.Iteration(); err != nil {
			return nil, err
		}
		r.iter++
		resp, err := r.reason(ctx, modelCall{msgs: msgs, json: true, quiet: true})
		if err != nil {
			return nil, err
		}
		steps, err := planexec.Parse(resp.Content)
		if err == nil {
			err = planexec.Validate(steps, finished, maxSteps)
		}
		if err == nil && left != budget.Unlimited && int64(len(steps)) > left {
			if try == 1 {
				return nil, r.acct.PlanStepsFit(len(steps))
			}
			err = fmt.Errorf("%d steps, but the budget has %d plan steps left (max_plan_steps)", len(steps), left)
		}
		if err == nil {
			data := journal.PlanCreatedData{Replan: failed != nil, Steps: make([]journal.PlanStep, len(steps))}
			for i, s := range steps {
				data.Steps[i] = journal.PlanStep{ID: s.ID, Description: s.Task, DependsOn: s.DependsOn}
			}
			return steps, r.mustRecord(journal.PlanCreated, data)
		}
		lastErr = err
		msgs = append(msgs,
			provider.Message{Role: provider.Assistant, Content: resp.Content},
			provider.Message{Role: provider.User, Content: fmt.Sprintf("That plan cannot run: %v. Reply with a corrected plan, as the same JSON object only.", err)})
	}
	return nil, lastErr
}

// runPlanStep carries out one step as a react sub-run of this agent,
// sharing its budget, with the results of the steps it depends on.
func (r *run) runPlanStep(ctx context.Context, s planexec.Step, deps []planexec.Result) (string, error) {
	var in strings.Builder
	fmt.Fprintf(&in, "You are carrying out one step of a larger task.\n\n<task>\n%s\n</task>\n\nYour step (%s): %s\n", r.input, s.ID, s.Task)
	if len(deps) > 0 {
		in.WriteString("\nResults of the steps it builds on:\n")
		for _, d := range deps {
			fmt.Fprintf(&in, "- %s (%s): %s\n", d.ID, d.Task, d.Output)
		}
	}
	in.WriteString("\nDo this step only and reply with its result.")
	// A step is part of this run, at its depth; this agent among its own
	// ancestors marks it so: it neither pre-hydrates nor persists knowledge
	// again.
	ro := r.childOptions(r.ro.Depth)
	ro.Mode = "react"
	if !ro.NoJournal {
		ro.RunID = fmt.Sprintf("%s.%s", r.id, planexec.SafeID(s.ID))
	}
	sctx, span := r.e.startStep(ctx, spanPlanStep+" "+s.ID, r.id, attrStepID.String(s.ID))
	res, err := r.subRun(sctx, r.agent.Address, in.String(), ro)
	if err != nil {
		r.e.endStep(span, err)
		return "", err
	}
	var stepErr error
	if res.Termination.Reason != Completed {
		stepErr = terminationErr(res.Termination)
	}
	r.e.endStep(span, stepErr, attrStepStatus.String(string(res.Termination.Reason)))
	t := res.Termination
	switch t.Reason {
	case Completed:
		return res.Answer, nil
	case BudgetExceeded, MaxIterations, AgentTerminated:
		// The budget is shared: what stopped the step stops the plan. And
		// a step's model that ended the run (allow_terminate), with a
		// policy's leave, ends the plan too, not just the step.
		return "", &planexec.StopError{Err: terminationErr(t)}
	case TimedOut:
		if t.Limit == "timeout" { // the run's own deadline, not step_timeout
			return "", &planexec.StopError{Err: terminationErr(t)}
		}
	case Cancelled:
		if ctx.Err() != nil {
			return "", ctx.Err() // step_timeout or the caller: the scheduler tells which
		}
	}
	return "", terminationErr(t)
}

// synthesize writes the final answer from the step results.
func (r *run) synthesize(ctx context.Context, order []string, results map[string]planexec.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "<task>\n%s\n</task>\n\nThe task was carried out in steps:\n", r.input)
	for _, id := range order {
		res, ok := results[id]
		if !ok {
			continue
		}
		if res.Status == planexec.Done {
			fmt.Fprintf(&b, "- %s (%s): %s\n", id, res.Task, res.Output)
		} else {
			fmt.Fprintf(&b, "- %s (%s): %s — %v\n", id, res.Task, res.Status, res.Err)
		}
	}
	b.WriteString("\nWrite the final answer to the task from these results.")
	msgs := []provider.Message{}
	if r.agent.System != "" {
		msgs = append(msgs, provider.Message{Role: provider.System, Content: r.agent.System})
	}
	msgs = append(msgs, provider.Message{Role: provider.User, Content: b.String()})
	if err := r.acct.Iteration(); err != nil {
		return err
	}
	r.iter++
	resp, err := r.reason(ctx, modelCall{msgs: msgs})
	if err != nil {
		resp.ToolCalls = nil // as below: the synthesis answers, it does not act
		return r.answerOverBudget(ctx, resp, err)
	}
	if len(resp.ToolCalls) > 0 && resp.Content == "" {
		return errors.New("plan_execute: the synthesis call proposed tool calls instead of an answer")
	}
	resp.ToolCalls = nil
	return r.respond(ctx, resp)
}

// terminationErr is the error behind a sub-run's termination.
func terminationErr(t Termination) error {
	if t.Err != nil {
		return t.Err
	}
	return errors.New(t.String())
}
