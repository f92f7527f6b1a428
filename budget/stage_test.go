package budget

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

func TestReserveStage(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxModelCalls: 4, MaxTotalTokens: 12000})
	est := Usage{ModelCalls: 1, TotalTokens: 3000}
	for range 4 {
		if _, err := a.ReserveStage(est); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Reserved(); got.ModelCalls != 4 || got.TotalTokens != 12000 {
		t.Errorf("reserved %+v", got)
	}
	_, err := a.ReserveStage(est)
	wantExceeded(t, err, MaxModelCalls, 4, 5, true)
	if a.Err() != err {
		t.Error("a refused stage is not sticky")
	}

	// Settling replaces the estimate with what the stage used.
	b, _ := newAt(plan.Budget{MaxModelCalls: 4, MaxTotalTokens: 12000})
	r1, _ := b.ReserveStage(est)
	r2, _ := b.ReserveStage(est)
	if err := r1.Settle(Usage{ModelCalls: 1, PromptTokens: 800, CompletionTokens: 200, TotalTokens: 5}); err != nil {
		t.Fatal(err)
	}
	if u := b.Usage(); u.TotalTokens != 1000 || u.ModelCalls != 1 {
		t.Errorf("after settle: %+v (a small total must be raised to the sum)", u)
	}
	if got := b.Remaining().TotalTokens; got != 12000-1000-3000 {
		t.Errorf("remaining %d", got)
	}
	r2.Release()
	if u := b.Usage(); u.ModelCalls != 1 || b.Reserved() != (Usage{}) {
		t.Errorf("a released stage counted: used %+v, reserved %+v", u, b.Reserved())
	}
	if err := r1.Settle(Usage{}); err == nil {
		t.Error("a second Settle was accepted")
	}
}

func TestSettleOvershoot(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxToolCalls: 3, MaxCostUSD: 1})
	r, err := a.ReserveStage(Usage{ToolCalls: 2, CostUSD: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	wantExceeded(t, r.Settle(Usage{ToolCalls: 4, CostUSD: 0.2}), MaxToolCalls, 3, 4, false)

	b, _ := newAt(plan.Budget{MaxCostUSD: 1})
	r, _ = b.ReserveStage(Usage{CostUSD: 0.5})
	wantExceeded(t, r.Settle(Usage{CostUSD: 1.25}), MaxCostUSD, 1, 1.25, false)

	c, _ := newAt(plan.Budget{})
	r, _ = c.ReserveStage(Usage{})
	if err := r.Settle(Usage{CostUSD: math.NaN()}); !errors.Is(err, ErrInvalidUsage) {
		t.Errorf("NaN cost: %v", err)
	}
}

func TestReserveStageRejectsBadEstimates(t *testing.T) {
	a, _ := newAt(plan.Budget{})
	for _, est := range []Usage{{ModelCalls: -1}, {TotalTokens: -5}, {CostUSD: math.Inf(1)}, {CostUSD: -0.1}} {
		if _, err := a.ReserveStage(est); !errors.Is(err, ErrInvalidUsage) {
			t.Errorf("estimate %+v: %v", est, err)
		}
	}
	if a.Err() != nil {
		t.Errorf("a bad estimate became the run's budget error: %v", a.Err())
	}
}

func TestStageLimits(t *testing.T) {
	a, c := newAt(plan.Budget{MaxModelCalls: 8, MaxTotalTokens: 12000, MaxCostUSD: 1, Timeout: plan.Duration(time.Minute)})
	mine, _ := a.ReserveStage(Usage{ModelCalls: 2, TotalTokens: 3000, CostUSD: 0.25})
	other, _ := a.ReserveStage(Usage{ModelCalls: 2, TotalTokens: 3000, CostUSD: 0.25})
	c.Advance(20 * time.Second)

	own := plan.DefaultBudget() // 25 iterations, 100000 tokens, 5m
	got := mine.Limits(own)
	want := own
	want.MaxModelCalls = 6     // 8 less the other stage's 2
	want.MaxTotalTokens = 9000 // 12000 less the other stage's 3000
	want.MaxCostUSD = 0.75     // 1 less 0.25
	want.Timeout = plan.Duration(40 * time.Second)
	if got != want {
		t.Errorf("Limits:\n got %+v\nwant %+v", got, want)
	}
	// A tighter limit of the stage's own is kept.
	own.MaxTotalTokens = 5000
	if got := mine.Limits(own).MaxTotalTokens; got != 5000 {
		t.Errorf("own tighter limit lost: %d", got)
	}
	// Nothing left is the smallest limit, never 0 (unlimited).
	if err := other.Settle(Usage{ModelCalls: 6, TotalTokens: 9000}); err != nil {
		t.Fatal(err)
	}
	got = mine.Limits(plan.Budget{})
	if got.MaxModelCalls != 2 || got.MaxTotalTokens != 3000 {
		t.Errorf("after the other stage spent the rest: %+v", got)
	}
	mine.Settle(Usage{ModelCalls: 2, TotalTokens: 3000})
	if got := mine.Limits(plan.Budget{}); got.MaxModelCalls != 1 || got.MaxTotalTokens != 1 {
		t.Errorf("with nothing left: %+v", got)
	}
}

// Stages run side by side, each under an accountant built from its
// reservation's Limits: the shared budget is passed by no more than what
// the stages in flight use beyond their estimates.
func TestConcurrentStages(t *testing.T) {
	shared := New(plan.Budget{MaxModelCalls: 40, MaxTotalTokens: 30000})
	const workers = 4
	est := Usage{ModelCalls: 2, TotalTokens: 2000}
	var wg sync.WaitGroup
	var mu sync.Mutex
	maxExcess := int64(0)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := shared.ReserveStage(est)
				if err != nil {
					return
				}
				stage := New(r.Limits(plan.Budget{MaxModelCalls: 3, EstimatedOutputTokensPerCall: 200}))
				for {
					res, _, err := stage.ReserveModelCall(700, 300, nil)
					if err != nil {
						break
					}
					res.Commit(usage(700, 200, 900), true)
				}
				u := stage.Usage()
				mu.Lock()
				maxExcess = max(maxExcess, u.TotalTokens-est.TotalTokens)
				mu.Unlock()
				if r.Settle(u) != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	u := shared.Usage()
	if u.TotalTokens > 30000+workers*maxExcess || u.ModelCalls > 40+workers*3 {
		t.Errorf("shared usage %+v (max excess a stage %d)", u, maxExcess)
	}
	if !errors.Is(shared.Err(), &Exceeded{}) || shared.Reserved() != (Usage{}) {
		t.Errorf("end: err %v, reserved %+v", shared.Err(), shared.Reserved())
	}
}
