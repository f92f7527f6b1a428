package engine

import (
	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// usageOf is what the accountant has counted, as policies and results see it.
func usageOf(a *budget.Accountant) budget.Amount {
	return a.Usage().Amount()
}

// remainingCost is what the router may still spend, and whether the
// budget limits cost at all.
func remainingCost(a *budget.Accountant) (float64, bool) {
	c := a.Remaining().CostUSD
	return max(c, 0), c != budget.Unlimited
}

// budgetInfo is the set limits of b by field name, for the journal's
// started event.
func budgetInfo(b plan.Budget) *journal.BudgetInfo {
	m := journal.BudgetInfo(policy.BudgetLimits(b))
	return &m
}
