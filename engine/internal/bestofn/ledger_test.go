package bestofn

import (
	"errors"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/plan"
)

// A stage runs under its own budget capped by what the ledger has left that
// no other stage reserved; an overspend found on reconciliation stops every
// later stage, and a released reservation gives its estimate back.
func TestLedgerReservesReconcilesAndReleases(t *testing.T) {
	l := NewLedger(plan.Budget{MaxTotalTokens: 100, MaxCostUSD: 1})
	est := budget.Amount{TotalTokens: 30, CostUSD: 0.25}

	a, lim, err := l.Reserve(est, plan.Budget{MaxTotalTokens: 1000})
	if err != nil || lim.MaxTotalTokens != 100 || lim.MaxCostUSD != 1 {
		t.Fatalf("first stage: %+v, %v; want its limits capped at the ledger's 100 tokens, $1", lim, err)
	}
	b, lim, err := l.Reserve(est, plan.Budget{MaxTotalTokens: 50})
	if err != nil || lim.MaxTotalTokens != 50 || lim.MaxCostUSD != 0.75 {
		t.Fatalf("second stage: %+v, %v; want its own 50 tokens and the $0.75 not reserved", lim, err)
	}
	b.Release()
	b.Release() // twice is once
	if err := a.Reconcile(budget.Amount{TotalTokens: 20, CostUSD: 0.1}); err != nil {
		t.Fatalf("reconcile within the limits: %v", err)
	}
	if u := l.Usage(); u.TotalTokens != 20 || u.CostUSD != 0.1 {
		t.Fatalf("usage %+v", u)
	}
	if _, lim, err := l.Reserve(est, plan.Budget{}); err != nil || lim.MaxTotalTokens != 80 {
		t.Fatalf("after a release and a reconcile: %+v, %v; want 80 tokens left", lim, err)
	}

	c, _, err := l.Reserve(budget.Amount{TotalTokens: 10}, plan.Budget{})
	if err != nil {
		t.Fatal(err)
	}
	var ex *budget.Exceeded
	if err := c.Reconcile(budget.Amount{TotalTokens: 500}); !errors.As(err, &ex) || ex.Limit != "max_total_tokens" {
		t.Fatalf("overspend = %v, want max_total_tokens exceeded", err)
	}
	if _, _, err := l.Reserve(budget.Amount{}, plan.Budget{}); !errors.As(err, &ex) {
		t.Fatalf("a ledger overspent still funds a stage: %v", err)
	}
}

// A stage whose estimate does not fit is refused before it runs, naming the
// limit; without aggregate limits the ledger only adds up.
func TestLedgerRefusesWhatDoesNotFit(t *testing.T) {
	l := NewLedger(plan.Budget{MaxModelCalls: 2})
	if _, _, err := l.Reserve(budget.Amount{ModelCalls: 3}, plan.Budget{}); err == nil {
		t.Fatal("an estimate over the limit was reserved")
	} else if ex := (*budget.Exceeded)(nil); !errors.As(err, &ex) || ex.Limit != "max_model_calls" {
		t.Fatalf("err = %v", err)
	}

	free := NewLedger(plan.Budget{})
	for range 3 {
		r, lim, err := free.Reserve(budget.Amount{TotalTokens: 1 << 40}, plan.Budget{MaxTotalTokens: 7})
		if err != nil || lim.MaxTotalTokens != 7 {
			t.Fatalf("no aggregate limit: %+v, %v", lim, err)
		}
		if err := r.Reconcile(budget.Amount{TotalTokens: 5}); err != nil {
			t.Fatal(err)
		}
	}
	if u := free.Usage(); u.TotalTokens != 15 {
		t.Fatalf("usage %+v", u)
	}
}
