package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine/internal/progress"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// The progress tracker (package engine/internal/progress), under the names
// the engine has always exported.
type (
	// ProgressVerdict is what the progress tracker says after a failed step.
	ProgressVerdict = progress.Verdict
	// ProgressTracker detects a step that keeps failing the same way.
	ProgressTracker = progress.Tracker
	// StuckError ends a run whose step kept failing the same way.
	StuckError = progress.StuckError
)

const (
	ProgressContinue = progress.Continue
	ProgressSkip     = progress.Skip
	ProgressAbort    = progress.Abort
	ProgressEscalate = progress.Escalate
)

// NewProgressTracker returns a tracker for one run.
func NewProgressTracker(cfg plan.Progress) *ProgressTracker { return progress.New(cfg) }

// SkipObservation is what the model reads when a step was skipped.
func SkipObservation(stepKey string) string { return progress.SkipObservation(stepKey) }

// ErrorSimilarity compares two error texts in [0, 1] (progress.Similarity).
func ErrorSimilarity(a, b string) float64 { return progress.Similarity(a, b) }

// trackProgress applies the agent's progress block to one iteration's
// observations, before they join the conversation: a failed tool call is
// observed under the tool's name, a successful one forgets the tool's
// failures. On skip the observation tells the model to stop calling the
// tool; on abort the run ends with *StuckError; on escalate a person decides
// whether the tool gets another chance (a refusal, or no one to ask, ends
// the run like abort).
//
// The react loop (step) and plan_execute call it between act and observe,
// with one tracker per run.
func (r *run) trackProgress(ctx context.Context, t *ProgressTracker, obs []observation) error {
	for i := range obs {
		o := &obs[i]
		if o.tool == "" || o.tool == plan.DelegateTool {
			continue
		}
		switch o.kind {
		case obsResult:
			t.Succeeded(o.tool)
			continue
		case obsError:
		default:
			continue // a policy denial is the gate's answer, not a failure to make progress
		}
		verdict := t.Observe
		if o.failure == builtins.CircuitOpen {
			// The breaker refused the call because the tool kept failing:
			// the same failure again, in other words.
			verdict = t.Repeat
		}
		switch verdict(o.tool, o.content) {
		case ProgressSkip:
			o.content += "\n" + SkipObservation(o.tool)
		case ProgressAbort:
			return t.Stuck(o.tool)
		case ProgressEscalate:
			a := policy.Action{Type: policy.ToolCall, Tool: o.tool, CallID: o.callID}
			ok, err := r.escalate(ctx, a, "", 0, fmt.Errorf("%s keeps failing the same way: %s", o.tool, o.content))
			if err != nil || !ok {
				return errors.Join(t.Stuck(o.tool), err)
			}
			t.Succeeded(o.tool) // a person said go on: count afresh
		}
	}
	return nil
}
