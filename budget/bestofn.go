package budget

import (
	"fmt"

	"github.com/symbi-dev/symbi/plan"
)

// PreflightBestOfN checks before any call that candidates × (generation +
// scorer estimates) fits every aggregate limit that is set: max_model_calls,
// max_total_tokens and max_cost_usd (cost_usd_per_candidate +
// scorer_cost_usd_per_candidate). A set limit whose combined estimate is
// zero is an error (ErrZeroEstimate), since nothing would stop N candidates
// spending N times what the author meant. The compiler runs it so that an
// impossible best_of_n block never reaches the engine.
func PreflightBestOfN(b plan.Budget, e plan.Estimate, candidates int) error {
	if candidates < 1 {
		return fmt.Errorf("budget: best-of-N needs at least one candidate, not %d", candidates)
	}
	for name, v := range map[string]int64{
		"model_calls_per_candidate":         e.ModelCallsPerCandidate,
		"total_tokens_per_candidate":        e.TotalTokensPerCandidate,
		"scorer_model_calls_per_candidate":  e.ScorerModelCallsPerCandidate,
		"scorer_total_tokens_per_candidate": e.ScorerTotalTokensPerCandidate,
	} {
		if v < 0 {
			return fmt.Errorf("budget: best-of-N estimate %s is negative (%d)", name, v)
		}
	}
	for name, v := range map[string]float64{
		"cost_usd_per_candidate":        e.CostUSDPerCandidate,
		"scorer_cost_usd_per_candidate": e.ScorerCostUSDPerCandidate,
	} {
		if !validCost(v) {
			return fmt.Errorf("budget: best-of-N estimate %s is %v", name, v)
		}
	}
	n := float64(candidates)
	for _, l := range []struct {
		limit  string
		fields []string
		max    int64
		per    float64
	}{
		{MaxModelCalls, []string{"model_calls_per_candidate", "scorer_model_calls_per_candidate"}, b.MaxModelCalls,
			float64(e.ModelCallsPerCandidate) + float64(e.ScorerModelCallsPerCandidate)},
		{MaxTotalTokens, []string{"total_tokens_per_candidate", "scorer_total_tokens_per_candidate"}, b.MaxTotalTokens,
			float64(e.TotalTokensPerCandidate) + float64(e.ScorerTotalTokensPerCandidate)},
	} {
		if l.max <= 0 {
			continue
		}
		if l.per == 0 {
			return &ZeroEstimateError{Limit: l.limit, Estimates: l.fields}
		}
		// In float64: the product of two large counts must not wrap or
		// saturate to a value that happens to fit.
		if need := n * l.per; need > float64(l.max) {
			return &Exceeded{Limit: l.limit, Max: float64(l.max), Used: need, Preflight: true}
		}
	}
	if m := b.MaxCostUSD; m > 0 {
		per := e.CostUSDPerCandidate + e.ScorerCostUSDPerCandidate
		if per == 0 {
			return &ZeroEstimateError{Limit: MaxCostUSD, Estimates: []string{"cost_usd_per_candidate", "scorer_cost_usd_per_candidate"}}
		}
		if need := n * per; need > m {
			return &Exceeded{Limit: MaxCostUSD, Max: m, Used: need, Preflight: true}
		}
	}
	return nil
}
