package planexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/engine/internal/answer"
)

// Step is one step of a plan_execute plan, as the model wrote it.
type Step struct {
	ID        string   `json:"id"`
	Task      string   `json:"task"`
	DependsOn []string `json:"depends_on"`
}

// Error says why a plan the model wrote cannot run. Kind is one of the
// Error* constants; test it with errors.As.
type Error struct {
	Kind   string
	Step   string // the step concerned, when there is one
	Detail string
}

const (
	KindInvalid           = "invalid_plan"       // not a JSON object with a steps list
	KindEmpty             = "empty_plan"         // no steps
	KindDuplicateStep     = "duplicate_step"     // two steps with one id
	KindMissingID         = "missing_id"         // a step without id or task
	KindUnknownDependency = "unknown_dependency" // depends_on names no step
	KindCycle             = "dependency_cycle"   // steps wait on each other
	KindTooManySteps      = "too_many_steps"     // more than plan.max_steps (the budget's max_plan_steps is a budget error)
)

func (e *Error) Error() string {
	s := "plan: " + e.Kind
	if e.Step != "" {
		s += " at step " + e.Step
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Parse reads the plan from the model's answer. Models often wrap JSON
// in prose or a code fence, so the outermost {...} is taken.
func Parse(text string) ([]Step, error) {
	raw, ok := answer.JSONObject(text)
	if !ok {
		return nil, &Error{Kind: KindInvalid, Detail: "the answer holds no JSON object"}
	}
	var doc struct {
		Steps []struct {
			ID          string   `json:"id"`
			Task        string   `json:"task"`
			Description string   `json:"description"`
			DependsOn   []string `json:"depends_on"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return nil, &Error{Kind: KindInvalid, Detail: err.Error()}
	}
	steps := make([]Step, len(doc.Steps))
	for i, s := range doc.Steps {
		task := s.Task
		if task == "" {
			task = s.Description
		}
		steps[i] = Step{ID: strings.TrimSpace(s.ID), Task: strings.TrimSpace(task), DependsOn: s.DependsOn}
	}
	return steps, nil
}

// Validate checks a plan before any step runs: ids present and unique,
// every dependency known (a step of this plan or one finished under an
// earlier plan, named in done), no cycle, and at most maxSteps steps (0:
// no limit).
func Validate(steps []Step, done map[string]bool, maxSteps int) error {
	if len(steps) == 0 {
		return &Error{Kind: KindEmpty, Detail: "the plan has no steps"}
	}
	if maxSteps > 0 && len(steps) > maxSteps {
		return &Error{Kind: KindTooManySteps, Detail: fmt.Sprintf("%d steps, at most %d allowed", len(steps), maxSteps)}
	}
	index := map[string]int{}
	for i, s := range steps {
		if s.ID == "" || s.Task == "" {
			return &Error{Kind: KindMissingID, Step: s.ID, Detail: fmt.Sprintf("step %d needs both an id and a task", i+1)}
		}
		if _, dup := index[s.ID]; dup || done[s.ID] {
			return &Error{Kind: KindDuplicateStep, Step: s.ID, Detail: "step ids must be unique"}
		}
		index[s.ID] = i
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			if _, ok := index[d]; !ok && !done[d] {
				return &Error{Kind: KindUnknownDependency, Step: s.ID, Detail: fmt.Sprintf("depends on %q, which is not a step", d)}
			}
		}
	}
	// Depth-first search with colours; the path is reported so a model
	// asked to fix the plan sees which steps wait on each other.
	const (
		white = iota
		grey
		black
	)
	colour := make([]int, len(steps))
	var path []string
	var visit func(i int) error
	visit = func(i int) error {
		colour[i] = grey
		path = append(path, steps[i].ID)
		for _, d := range steps[i].DependsOn {
			j, ok := index[d]
			if !ok {
				continue // finished under an earlier plan
			}
			switch colour[j] {
			case grey:
				start := 0
				for k, id := range path {
					if id == d {
						start = k
					}
				}
				cycle := append(append([]string(nil), path[start:]...), d)
				return &Error{Kind: KindCycle, Step: d, Detail: strings.Join(cycle, " -> ")}
			case white:
				if err := visit(j); err != nil {
					return err
				}
			}
		}
		path = path[:len(path)-1]
		colour[i] = black
		return nil
	}
	for i := range steps {
		if colour[i] == white {
			if err := visit(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// Step statuses, as journalled in step_finished.
const (
	Done    = "done"
	Failed  = "failed"
	Skipped = "skipped"
)

// Result is how one step ended.
type Result struct {
	ID      string
	Task    string
	Status  string
	Output  string
	Err     error
	Elapsed time.Duration
}

// StepFailedError is a plan step that failed while the plan could not go on
// without it.
type StepFailedError struct {
	Step string
	Err  error
}

func (e *StepFailedError) Error() string {
	return fmt.Sprintf("plan step %s failed: %v", e.Step, e.Err)
}
func (e *StepFailedError) Unwrap() error { return e.Err }

// StopError marks a step error that must stop the whole plan, whatever
// continue_after_step_failure says: the shared budget ran out, or the run
// was cancelled.
type StopError struct{ Err error }

func (e *StopError) Error() string { return e.Err.Error() }
func (e *StopError) Unwrap() error { return e.Err }

// ErrStepTimeout is the cause of a step that ran past step_timeout.
var ErrStepTimeout = errors.New("step timed out")

// Scheduler runs a validated plan's steps: every step whose dependencies
// are done is ready, and ready steps start in plan order, at most parallel at
// a time, each under its own timeout.
type Scheduler struct {
	Parallel             int
	StepTimeout          time.Duration
	ContinueAfterFailure bool
	// Before runs before a step starts (budget, journal); an error stops the
	// plan: no further step starts.
	Before func(s Step) error
	// Run executes one step, given the results of its dependencies.
	Run func(ctx context.Context, s Step, deps []Result) (string, error)
	// After sees every step's outcome, including skipped ones.
	After func(r Result)
	Now   func() time.Time
	// Inline runs each step on the caller's goroutine, one at a time,
	// whatever Parallel says: a durable runtime's workflow, whose steps
	// must replay in one order, starts no goroutines.
	Inline bool
	// WithTimeout makes a step's deadline (context.WithTimeoutCause when
	// nil); a runtime measures it on its own clock.
	WithTimeout func(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
}

// Execute runs steps. results holds the steps finished under earlier plans
// and receives the new ones. It returns nil when every step ended (done, or
// failed/skipped under continue_after_step_failure), a *StepFailedError for
// the first failure otherwise, or the error that stopped the plan (budget,
// cancellation). Steps already running when the plan stops are waited for,
// so no goroutine outlives Execute.
func (sc *Scheduler) Execute(ctx context.Context, steps []Step, results map[string]Result) error {
	parallel := max(sc.Parallel, 1)
	if sc.Inline {
		parallel = 1
	}
	withTimeout := sc.WithTimeout
	if withTimeout == nil {
		withTimeout = context.WithTimeoutCause
	}
	type finished struct {
		res Result
	}
	ch := make(chan finished)
	var inline []finished // Inline: steps that ended, not yet taken
	started := make([]bool, len(steps))
	running := 0
	var stopErr error

	depsOf := func(s Step) (ready, blocked bool, deps []Result) {
		for _, d := range s.DependsOn {
			r, ok := results[d]
			switch {
			case !ok:
				return false, false, nil
			case r.Status != Done:
				return false, true, nil
			}
			deps = append(deps, r)
		}
		return true, false, deps
	}

	for {
		if stopErr == nil && ctx.Err() != nil {
			stopErr = ctx.Err()
		}
		if stopErr == nil {
			for progressed := true; progressed; {
				progressed = false
				for i, s := range steps {
					if started[i] {
						continue
					}
					ready, blocked, deps := depsOf(s)
					if blocked {
						// Only reachable under continue_after_step_failure: a
						// failed step stops the plan otherwise.
						started[i] = true
						r := Result{ID: s.ID, Task: s.Task, Status: Skipped, Err: errors.New("a step it depends on did not finish")}
						results[s.ID] = r
						sc.After(r)
						progressed = true
						continue
					}
					if !ready || running >= parallel {
						continue
					}
					if err := sc.Before(s); err != nil {
						stopErr = err
						break
					}
					started[i] = true
					running++
					run := func(s Step, deps []Result) finished {
						t0 := sc.Now()
						sctx, cancel := context.WithCancelCause(ctx)
						if sc.StepTimeout > 0 {
							var c2 context.CancelFunc
							sctx, c2 = withTimeout(sctx, sc.StepTimeout, fmt.Errorf("%w after %s", ErrStepTimeout, sc.StepTimeout))
							defer c2()
						}
						out, err := sc.Run(sctx, s, deps)
						// A step that overran reports its own context error;
						// name the real cause so the replanner sees a timeout.
						if cause := context.Cause(sctx); err != nil && ctx.Err() == nil && errors.Is(cause, ErrStepTimeout) {
							err = cause
						}
						cancel(nil)
						r := Result{ID: s.ID, Task: s.Task, Status: Done, Output: out, Elapsed: sc.Now().Sub(t0)}
						if err != nil {
							r.Status, r.Err, r.Output = Failed, err, ""
						}
						return finished{r}
					}
					if sc.Inline {
						inline = append(inline, run(s, deps))
					} else {
						go func() { ch <- run(s, deps) }()
					}
					progressed = true
				}
				if stopErr != nil {
					break
				}
			}
		}
		if running == 0 {
			break
		}
		var f finished
		if len(inline) > 0 {
			f, inline = inline[0], inline[1:]
		} else {
			f = <-ch
		}
		running--
		results[f.res.ID] = f.res
		sc.After(f.res)
		if f.res.Status == Failed && stopErr == nil {
			var ps *StopError
			switch {
			case errors.As(f.res.Err, &ps):
				stopErr = ps.Err
			case ctx.Err() != nil:
				stopErr = ctx.Err()
			case !sc.ContinueAfterFailure:
				stopErr = &StepFailedError{Step: f.res.ID, Err: f.res.Err}
			}
		}
	}
	if stopErr != nil {
		return stopErr
	}
	for i, s := range steps {
		if !started[i] { // unreachable for a validated plan; never hang or lose a step silently
			r := Result{ID: s.ID, Task: s.Task, Status: Skipped, Err: errors.New("never became ready")}
			results[s.ID] = r
			sc.After(r)
		}
	}
	return nil
}
