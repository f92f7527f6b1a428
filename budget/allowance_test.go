package budget

import (
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

// An allowance that crosses a process boundary as JSON (a best-of-N
// candidate's child workflow) gives the accountant Stage gives: the same
// limits, and a limit with nothing left still allows nothing and reports
// its floor as unused.
func TestAllowanceCrossesAsJSON(t *testing.T) {
	agg := New(plan.Budget{MaxIterations: 2, MaxToolCalls: 1, MaxTotalTokens: 100})
	r1, err := agg.ReserveStage(Usage{Iterations: 1, ToolCalls: 1, TotalTokens: 40})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := agg.ReserveStage(Usage{Iterations: 1, TotalTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r2.Allowance(plan.Budget{MaxTotalTokens: 500}))
	if err != nil {
		t.Fatal(err)
	}
	var al Allowance
	if err := json.Unmarshal(b, &al); err != nil {
		t.Fatal(err)
	}
	far, near := al.Accountant(), r2.Stage(plan.Budget{MaxTotalTokens: 500})
	if far.Budget() != near.Budget() || far.Budget().MaxTotalTokens != 60 || far.Budget().MaxIterations != 1 {
		t.Fatalf("limits across JSON %+v, here %+v", far.Budget(), near.Budget())
	}
	if err := far.Iteration(); err != nil {
		t.Fatal(err)
	}
	// r1 holds the one tool call: the allowance allows none.
	wantExceeded(t, far.ToolCall(), MaxToolCalls, 0, 1, true)
	if u := far.Usage(); u != (Usage{Iterations: 1, Elapsed: u.Elapsed}) {
		t.Errorf("usage %+v reports the floor", u)
	}
	if err := r2.Settle(far.Usage()); err != nil {
		t.Fatalf("a stage that kept to its allowance passed the aggregate: %v", err)
	}
	r1.Release()
}
