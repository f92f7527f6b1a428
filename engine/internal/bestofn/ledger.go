package bestofn

import (
	"math"
	"sync"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/plan"
)

// Ledger is a best-of-N run's aggregate budget: the limits of the
// block's budget, shared by the generation and scoring of every candidate.
//
// Each stage (one candidate's generation, one candidate's scoring) reserves
// its estimate before it starts and is reconciled with what it reported
// after (per Wuwe). A stage runs under its own accountant whose limits are
// the agent's own, capped by what the ledger has left that other stages have
// not reserved, so a stage cannot spend capacity promised to another. A
// stage the ledger cannot fund, or a limit overspent on reconciliation,
// stops the whole run. Stages running at once can together overspend only
// by what they use beyond their estimates: the estimates are what preflight
// and reservation rely on.
type Ledger struct {
	mu       sync.Mutex
	limits   plan.Budget
	used     budget.Amount
	reserved budget.Amount
	err      error // the first exhaustion; sticky
}

func NewLedger(limits plan.Budget) *Ledger { return &Ledger{limits: limits} }

// Reservation is one stage's claim on the ledger.
type Reservation struct {
	l    *Ledger
	est  budget.Amount
	done bool
}

// Reserve claims est for one stage and returns the budget the stage may run
// under: own's limits capped by the ledger's unreserved remainder plus est.
// An error (a *budget.Exceeded) means the ledger cannot fund the stage.
func (l *Ledger) Reserve(est budget.Amount, own plan.Budget) (*Reservation, plan.Budget, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, own, l.err
	}
	free := func(limit, used, reserved int64) int64 { return limit - used - reserved }
	capInt := func(name string, limit, used, reserved, need int64, field *int64) error {
		if limit <= 0 {
			return nil
		}
		room := free(limit, used, reserved)
		if room <= 0 || need > room {
			// Used is what the stage would bring the total to: spent,
			// reserved by stages in flight, and this stage's estimate.
			return &budget.Exceeded{Limit: name, Max: float64(limit), Used: float64(used) + float64(reserved) + float64(need)}
		}
		if *field <= 0 || *field > room {
			*field = room
		}
		return nil
	}
	b := own
	lim, u, rs := l.limits, l.used, l.reserved
	for _, c := range []struct {
		name                  string
		limit, used, reserved int64
		need                  int64
		field                 *int64
	}{
		{"max_model_calls", lim.MaxModelCalls, u.ModelCalls, rs.ModelCalls, est.ModelCalls, &b.MaxModelCalls},
		{"max_tool_calls", lim.MaxToolCalls, u.ToolCalls, rs.ToolCalls, est.ToolCalls, &b.MaxToolCalls},
		{"max_prompt_tokens", lim.MaxPromptTokens, u.PromptTokens, rs.PromptTokens, est.PromptTokens, &b.MaxPromptTokens},
		{"max_completion_tokens", lim.MaxCompletionTokens, u.CompletionTokens, rs.CompletionTokens, est.CompletionTokens, &b.MaxCompletionTokens},
		{"max_total_tokens", lim.MaxTotalTokens, u.TotalTokens, rs.TotalTokens, est.TotalTokens, &b.MaxTotalTokens},
	} {
		if err := capInt(c.name, c.limit, c.used, c.reserved, c.need, c.field); err != nil {
			l.err = err
			return nil, own, err
		}
	}
	if lim.MaxCostUSD > 0 {
		room := lim.MaxCostUSD - u.CostUSD - rs.CostUSD
		if room <= 0 || est.CostUSD > room {
			l.err = &budget.Exceeded{Limit: "max_cost_usd", Max: lim.MaxCostUSD, Used: u.CostUSD + rs.CostUSD + est.CostUSD}
			return nil, own, l.err
		}
		if b.MaxCostUSD <= 0 || b.MaxCostUSD > room {
			b.MaxCostUSD = room
		}
	}
	l.reserved = addUsage(l.reserved, est)
	return &Reservation{l: l, est: est}, b, nil
}

// Reconcile replaces the stage's reservation with what it used, and reports
// the first limit overspent (sticky: every later Reserve fails with it).
func (r *Reservation) Reconcile(actual budget.Amount) error {
	if r == nil {
		return nil
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !r.done {
		r.done = true
		l.reserved = subUsage(l.reserved, r.est)
		l.used = addUsage(l.used, actual)
	}
	if l.err == nil {
		l.err = l.exhausted()
	}
	return l.err
}

// Release gives back a reservation whose stage never ran.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if !r.done {
		r.done = true
		r.l.reserved = subUsage(r.l.reserved, r.est)
	}
}

// exhausted names the first limit the used amount has gone past. A limit
// reached exactly is not an error here: the next stage that needs any of it
// fails to reserve, and a run that needs nothing more completes.
func (l *Ledger) exhausted() error {
	lim, u := l.limits, l.used
	for _, c := range []struct {
		name        string
		limit, used int64
	}{
		{"max_model_calls", lim.MaxModelCalls, u.ModelCalls},
		{"max_tool_calls", lim.MaxToolCalls, u.ToolCalls},
		{"max_prompt_tokens", lim.MaxPromptTokens, u.PromptTokens},
		{"max_completion_tokens", lim.MaxCompletionTokens, u.CompletionTokens},
		{"max_total_tokens", lim.MaxTotalTokens, u.TotalTokens},
	} {
		if c.limit > 0 && c.used > c.limit {
			return &budget.Exceeded{Limit: c.name, Max: float64(c.limit), Used: float64(c.used)}
		}
	}
	if lim.MaxCostUSD > 0 && (u.CostUSD > lim.MaxCostUSD || math.IsNaN(u.CostUSD)) {
		return &budget.Exceeded{Limit: "max_cost_usd", Max: lim.MaxCostUSD, Used: u.CostUSD}
	}
	return nil
}

// Usage is what every stage has reported so far.
func (l *Ledger) Usage() budget.Amount {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.used
}

func subUsage(a, b budget.Amount) budget.Amount {
	return budget.Amount{
		ModelCalls:       max(a.ModelCalls-b.ModelCalls, 0),
		ToolCalls:        max(a.ToolCalls-b.ToolCalls, 0),
		PromptTokens:     max(a.PromptTokens-b.PromptTokens, 0),
		CompletionTokens: max(a.CompletionTokens-b.CompletionTokens, 0),
		TotalTokens:      max(a.TotalTokens-b.TotalTokens, 0),
		CostUSD:          math.Max(a.CostUSD-b.CostUSD, 0),
	}
}
