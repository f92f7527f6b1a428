package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

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
	limit := cfg.MaxSteps
	if b := r.e.plan.Budget(r.agent.Budget).MaxPlanSteps; b > 0 && (limit <= 0 || int(b) < limit) {
		limit = int(b)
	}
	results := map[string]stepResult{}
	tracker := NewProgressTracker(r.agent.Progress)
	var order []string // step ids in the order their plans listed them
	steps, err := r.makePlan(ctx, limit, nil, nil)
	if err != nil {
		return err
	}
	for replans := 0; ; replans++ {
		for _, s := range steps {
			order = append(order, s.ID)
		}
		sched := &stepScheduler{
			parallel:             max(cfg.MaxParallelSteps, 1),
			stepTimeout:          cfg.StepTimeout.Std(),
			continueAfterFailure: cfg.ContinueAfterStepFailure,
			now:                  r.e.opts.Now,
			before: func(s planStep) error {
				if err := r.acct.PlanStep(); err != nil {
					return err
				}
				return r.mustRecord(journal.StepStarted, journal.StepStartedData{StepID: s.ID, Attempt: replans + 1})
			},
			run: r.runPlanStep,
			after: func(res stepResult) {
				data := journal.StepFinishedData{StepID: res.ID, Status: res.Status, Output: res.Output, DurationMS: res.Elapsed.Milliseconds()}
				if res.Err != nil {
					data.Error = res.Err.Error()
				}
				_ = r.record(journal.StepFinished, data)
			},
		}
		err := sched.execute(ctx, steps, results)
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
		if steps, err = r.makePlan(ctx, limit, results, failed); err != nil {
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
func (r *run) makePlan(ctx context.Context, limit int, done map[string]stepResult, failed *StepFailedError) ([]planStep, error) {
	finished := map[string]bool{}
	for id, res := range done {
		finished[id] = res.Status == stepDone
	}
	msgs := []provider.Message{}
	if r.agent.System != "" {
		msgs = append(msgs, provider.Message{Role: provider.System, Content: r.agent.System})
	}
	msgs = append(msgs, provider.Message{Role: provider.User, Content: planPrompt(r.input, limit, r.tools.specs, done, failed)})
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
		steps, err := parsePlan(resp.Content)
		if err == nil {
			err = validatePlan(steps, finished, limit)
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

// planPrompt is the planning request; docs/reasoning.md shows it.
func planPrompt(task string, limit int, tools []provider.ToolSpec, done map[string]stepResult, failed *StepFailedError) string {
	var b strings.Builder
	b.WriteString("Break the task below into steps. Each step is carried out on its own by an assistant with these tools: ")
	if len(tools) == 0 {
		b.WriteString("(none)")
	}
	for i, t := range tools {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name)
	}
	b.WriteString(".\n\n<task>\n")
	b.WriteString(task)
	b.WriteString("\n</task>\n")
	if failed != nil {
		b.WriteString("\nA previous plan was partly carried out.\n")
		ids := make([]string, 0, len(done))
		for id := range done {
			ids = append(ids, id)
		}
		sort.Strings(ids) // a prompt that does not depend on map order
		for _, id := range ids {
			res := done[id]
			switch res.Status {
			case stepDone:
				fmt.Fprintf(&b, "- step %s (%s) is done; its result: %s\n", id, res.Task, peClip(res.Output, 500))
			default:
				fmt.Fprintf(&b, "- step %s (%s) %s: %v\n", id, res.Task, res.Status, res.Err)
			}
		}
		fmt.Fprintf(&b, "Step %s failed: %v\nWrite a new plan for the remaining work only. Do not repeat the finished steps or reuse their ids; a new step may depend on a finished step by its id.\n", failed.Step, failed.Err)
	}
	b.WriteString("\nReply with only a JSON object: {\"steps\": [{\"id\": \"s1\", \"task\": \"what to do\", \"depends_on\": []}]}\n")
	b.WriteString("Ids are short and unique. depends_on lists the ids of the steps whose results a step needs; steps that do not depend on each other run in parallel.")
	if limit > 0 {
		fmt.Fprintf(&b, " Use at most %d steps.", limit)
	}
	return b.String()
}

// runPlanStep carries out one step as a react sub-run of this agent,
// sharing its budget, with the results of the steps it depends on.
func (r *run) runPlanStep(ctx context.Context, s planStep, deps []stepResult) (string, error) {
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
		ro.RunID = fmt.Sprintf("%s.%s", r.id, peSafeID(s.ID))
	}
	res, err := r.subRun(ctx, r.agent.Address, in.String(), ro)
	if err != nil {
		return "", err
	}
	t := res.Termination
	switch t.Reason {
	case Completed:
		return res.Answer, nil
	case BudgetExceeded, MaxIterations, AgentTerminated:
		// The budget is shared: what stopped the step stops the plan. And
		// a step's model that ended the run (allow_terminate), with a
		// policy's leave, ends the plan too, not just the step.
		return "", &planStopError{err: peTerminationErr(t)}
	case TimedOut:
		if t.Limit == "timeout" { // the run's own deadline, not step_timeout
			return "", &planStopError{err: peTerminationErr(t)}
		}
	case Cancelled:
		if ctx.Err() != nil {
			return "", ctx.Err() // step_timeout or the caller: the scheduler tells which
		}
	}
	return "", peTerminationErr(t)
}

// synthesize writes the final answer from the step results.
func (r *run) synthesize(ctx context.Context, order []string, results map[string]stepResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "<task>\n%s\n</task>\n\nThe task was carried out in steps:\n", r.input)
	for _, id := range order {
		res, ok := results[id]
		if !ok {
			continue
		}
		if res.Status == stepDone {
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
		return err
	}
	if len(resp.ToolCalls) > 0 && resp.Content == "" {
		return errors.New("plan_execute: the synthesis call proposed tool calls instead of an answer")
	}
	resp.ToolCalls = nil
	return r.respond(ctx, resp)
}

// peTerminationErr is the error behind a sub-run's termination.
func peTerminationErr(t Termination) error {
	if t.Err != nil {
		return t.Err
	}
	return errors.New(t.String())
}

func peClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// peSafeID keeps a model-written step id usable in a run id (a file name).
func peSafeID(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, id)
}
