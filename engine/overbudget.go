package engine

import (
	"context"
	"errors"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/provider"
)

// answerOverBudget handles a final answer whose own usage passed a token or
// cost limit (reason returns the turn with the budget error then). The
// answer arrived and was paid for, and it may already be on the terminal:
// it is gated like any answer and, when allowed, is the run's answer,
// reported with the limit it reached: the run still ends budget_exceeded
// (exit 3), and the result, the --json summary and the terminated event
// carry the answer. A denied answer is not reported. err is returned
// either way: the limit is what ended the run.
//
// Only a final answer qualifies (no tool calls: those are not run past a
// limit), and only where the mode's answer is final: not a reflect_and_retry
// draft, which was never evaluated.
func (r *run) answerOverBudget(ctx context.Context, resp provider.Response, err error) error {
	var ex *budget.Exceeded
	if !errors.As(err, &ex) || resp.Content == "" || len(resp.ToolCalls) > 0 || r.mode == "reflect_and_retry" {
		return err
	}
	if rerr := r.respond(ctx, resp); rerr != nil {
		// Denied (the policy_evaluated line says so), or its decision could
		// not be journalled: the answer is not reported.
		r.answer = ""
		return err
	}
	r.paidAnswer = true
	return err
}
