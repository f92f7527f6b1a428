package engine

import (
	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// usageOf is what the accountant has counted, as policies and results see it.
func usageOf(a *budget.Accountant) policy.Usage {
	u := a.Usage()
	return policy.Usage{
		ModelCalls:       u.ModelCalls,
		ToolCalls:        u.ToolCalls,
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CostUSD:          u.CostUSD,
	}
}

// remainingCost is what the router may still spend, and whether the
// budget limits cost at all.
func remainingCost(a *budget.Accountant) (float64, bool) {
	return a.RemainingCostUSD()
}

func (r *run) pricingOf(modelAddr string) *plan.Pricing {
	if m := r.e.plan.Model(modelAddr); m != nil {
		return m.Pricing
	}
	return nil
}

// budgetInfo is the set limits of b by field name, as policies and the
// journal's started event see them.
func budgetInfo(b plan.Budget) map[string]any { return policy.BudgetLimits(b) }
