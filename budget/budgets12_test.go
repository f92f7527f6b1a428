package budget

import (
	"testing"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// PlanStepsFit checks a whole plan against max_plan_steps without counting
// it; a plan that does not fit is the sticky budget error.
func TestPlanStepsFit(t *testing.T) {
	a := New(plan.Budget{MaxPlanSteps: 3})
	if err := a.PlanStep(); err != nil {
		t.Fatal(err)
	}
	if err := a.PlanStepsFit(2); err != nil {
		t.Fatalf("2 more of 3 with 1 used: %v", err)
	}
	if u := a.Usage(); u.PlanSteps != 1 {
		t.Fatalf("PlanStepsFit counted: %+v", u)
	}
	wantExceeded(t, a.PlanStepsFit(3), MaxPlanSteps, 3, 4, true)
	wantExceeded(t, a.PlanStep(), MaxPlanSteps, 3, 4, true) // sticky
	if err := New(plan.Budget{}).PlanStepsFit(1 << 30); err != nil {
		t.Errorf("unlimited: %v", err)
	}
}

// Counted is what Commit counted, in the provider's terms.
func TestCountedIsWhatCommitCounted(t *testing.T) {
	p := &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 2}
	a := New(plan.Budget{})
	r, _, err := a.ReserveModelCall(100, 50, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(provider.Usage{PromptTokens: 80, CompletionTokens: -1, TotalTokens: 3, CacheReadTokens: 500}, true); err != nil {
		t.Fatal(err)
	}
	c := r.Counted()
	want := provider.Usage{PromptTokens: 80, CompletionTokens: 50, TotalTokens: 130, CacheReadTokens: 80}
	if c != want {
		t.Errorf("counted %+v, want %+v", c, want)
	}
	if u := a.Usage(); u.TotalTokens != c.TotalTokens || CallCost(p, c) != u.CostUSD {
		t.Errorf("usage %+v, counted %+v at $%v", u, c, CallCost(p, c))
	}
	r, _, _ = a.ReserveModelCall(10, 20, p)
	if err := r.Commit(provider.Usage{}, false); err != nil {
		t.Fatal(err)
	}
	if c := r.Counted(); c != (provider.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}) {
		t.Errorf("unknown usage counted as %+v, want the estimate", c)
	}
}
