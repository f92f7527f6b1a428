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

// A stage accountant allows exactly what the aggregate has left that no
// other stage holds, for every counted limit; a limit with nothing left
// allows nothing (Limits can only say 1), its error says 0, and the stage's
// Usage does not count what it was never given.
func TestStageAllowsExactlyWhatIsLeft(t *testing.T) {
	agg := New(plan.Budget{MaxIterations: 3, MaxToolCalls: 2, MaxToolRounds: 5, MaxPlanSteps: 4, MaxReflectionAttempts: 1})
	r1, err := agg.ReserveStage(Usage{Iterations: 1})
	if err != nil {
		t.Fatal(err)
	}
	s1 := r1.Stage(plan.Budget{MaxIterations: 25})
	if got := s1.Budget(); got.MaxIterations != 3 || got.MaxToolCalls != 2 || got.MaxPlanSteps != 4 {
		t.Fatalf("first stage's limits %+v", got)
	}
	for range 2 {
		if err := s1.Iteration(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s1.ReserveToolCalls(2); err != nil {
		t.Fatal(err)
	}
	if err := s1.ReflectionAttempt(); err != nil {
		t.Fatal(err)
	}
	if err := r1.Settle(s1.Usage()); err != nil {
		t.Fatal(err)
	}

	r2, err := agg.ReserveStage(Usage{Iterations: 1})
	if err != nil {
		t.Fatal(err)
	}
	s2 := r2.Stage(plan.Budget{})
	if err := s2.Iteration(); err != nil {
		t.Fatalf("the iteration left: %v", err)
	}
	wantExceeded(t, s2.ToolCall(), MaxToolCalls, 0, 1, true)
	if u := s2.Usage(); u.Iterations != 1 || u.ToolCalls != 0 {
		t.Errorf("stage usage %+v", u)
	}
	if err := r2.Settle(s2.Usage()); err != nil {
		t.Fatalf("a stage that kept to what was left passed the aggregate: %v", err)
	}
	if u := agg.Usage(); u.Iterations != 3 || u.ToolCalls != 2 || u.ReflectionAttempts != 1 {
		t.Errorf("aggregate usage %+v", u)
	}
	r3, err := agg.ReserveStage(Usage{})
	if err != nil {
		t.Fatal(err)
	}
	st := r3.Stage(plan.Budget{})
	wantExceeded(t, st.Iteration(), MaxIterations, 0, 1, true)
	if r := st.Remaining(); r.Iterations != 0 || r.ToolCalls != 0 || r.ReflectionAttempts != 0 || r.ToolRounds != 5 || r.PlanSteps != 4 {
		t.Errorf("remaining %+v", r)
	}
	if _, err := agg.ReserveStage(Usage{Iterations: 1}); err == nil {
		t.Error("a stage that needs an iteration was reserved with none left")
	}
}

// The scorer's cost is estimated apart from the generation's, and the
// preflight adds them; a judge-only cost is an estimate too.
func TestPreflightBestOfNCountsTheScorerCost(t *testing.T) {
	b := plan.Budget{MaxCostUSD: 1}
	wantExceeded(t, PreflightBestOfN(b, plan.Estimate{CostUSDPerCandidate: 0.1, ScorerCostUSDPerCandidate: 0.2}, 4), MaxCostUSD, 1, 4*0.30000000000000004, true)
	if err := PreflightBestOfN(b, plan.Estimate{CostUSDPerCandidate: 0.1, ScorerCostUSDPerCandidate: 0.1}, 4); err != nil {
		t.Errorf("4 × $0.20 under $1: %v", err)
	}
	if err := PreflightBestOfN(b, plan.Estimate{ScorerCostUSDPerCandidate: 0.1}, 4); err != nil {
		t.Errorf("a scorer cost alone is an estimate: %v", err)
	}
	if err := PreflightBestOfN(b, plan.Estimate{ScorerCostUSDPerCandidate: -1}, 4); err == nil {
		t.Error("a negative scorer cost passed")
	}
}
