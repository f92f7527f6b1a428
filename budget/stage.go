package budget

import (
	"fmt"
	"math"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// ReserveStage reserves a whole stage's estimated usage — one best-of-N
// candidate's generation, or its scoring — against every limit before the
// stage starts, so stages running side by side cannot together promise
// more than the budget holds. It fails, naming the first limit (in the
// order of plan.Budget's fields) that est would pass; that error is sticky
// like any budget error. Settle the reservation with the stage's actual
// usage, or Release it if the stage never ran.
func (a *Accountant) ReserveStage(est Usage) (*Reservation, error) {
	if !validUsage(est) {
		return nil, fmt.Errorf("%w: stage estimate %+v has a negative or non-finite figure", ErrInvalidUsage, est)
	}
	est.Elapsed = 0
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return nil, err
	}
	t, _ := a.used.add(a.reserved)
	want, _ := t.add(est)
	if ex := a.firstPassed(want, true); ex != nil {
		return nil, a.fail(ex)
	}
	r := &Reservation{a: a, amount: est, stage: true}
	a.reserved, _ = a.reserved.add(est)
	return r, nil
}

// Settle replaces a stage reservation with what the stage used (typically
// the Usage of the accountant it ran under). A total smaller than prompt +
// completion is raised to the sum and a negative figure is replaced by its
// estimate, as in Commit. The usage is recorded even when it passes a
// limit; Settle then returns the budget error.
func (r *Reservation) Settle(actual Usage) error {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.settled {
		return errSettled
	}
	r.settled = true
	a.reserved = a.reserved.sub(r.amount)
	actual = normalize(actual, r.amount)
	if !validCost(actual.CostUSD) {
		return a.fail(fmt.Errorf("%w: stage cost %v", ErrInvalidUsage, actual.CostUSD))
	}
	used, over := a.used.add(actual)
	used.Elapsed = a.used.Elapsed
	a.used = used
	if over {
		return a.fail(fmt.Errorf("%w: a count overflows", ErrInvalidUsage))
	}
	if ex := a.firstPassed(used, false); ex != nil {
		return a.fail(ex)
	}
	return a.err
}

// Limits returns own (the budget a stage would run under) with every limit
// lowered to what this reservation's holder may still use: what the
// accountant has left that no other reservation holds. A stage run under
// the result cannot spend capacity promised to another stage. Since 0
// means unlimited in a plan.Budget, a limit with nothing left becomes the
// smallest non-zero value (1, one nanosecond, the smallest cost), which the
// stage's own accountant refuses to pass.
func (r *Reservation) Limits(own plan.Budget) plan.Budget {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	return r.limits(own, r.othersHold())
}

// othersHold is what the accountant has used and what reservations other
// than r hold. a.mu is held.
func (r *Reservation) othersHold() Usage {
	a := r.a
	held := r.amount
	if r.settled {
		held = Usage{}
	}
	t, _ := a.used.add(a.reserved.sub(held))
	return t
}

// limits is Limits, given othersHold. a.mu is held.
func (r *Reservation) limits(own plan.Budget, t Usage) plan.Budget {
	a := r.a
	capInt := func(limit, used int64, field *int64) {
		if limit <= 0 {
			return
		}
		room := max(limit-used, 1)
		if *field <= 0 || *field > room {
			*field = room
		}
	}
	capInt(a.b.MaxIterations, t.Iterations, &own.MaxIterations)
	capInt(a.b.MaxModelCalls, t.ModelCalls, &own.MaxModelCalls)
	capInt(a.b.MaxToolCalls, t.ToolCalls, &own.MaxToolCalls)
	capInt(a.b.MaxToolRounds, t.ToolRounds, &own.MaxToolRounds)
	capInt(a.b.MaxReflectionAttempts, t.ReflectionAttempts, &own.MaxReflectionAttempts)
	capInt(a.b.MaxPlanSteps, t.PlanSteps, &own.MaxPlanSteps)
	capInt(a.b.MaxPromptTokens, t.PromptTokens, &own.MaxPromptTokens)
	capInt(a.b.MaxCompletionTokens, t.CompletionTokens, &own.MaxCompletionTokens)
	capInt(a.b.MaxTotalTokens, t.TotalTokens, &own.MaxTotalTokens)
	if m := a.b.MaxCostUSD; m > 0 {
		room := max(m-t.CostUSD, math.SmallestNonzeroFloat64)
		if own.MaxCostUSD <= 0 || own.MaxCostUSD > room {
			own.MaxCostUSD = room
		}
	}
	if d := a.b.Timeout.Std(); d > 0 {
		left := max(d-a.elapsed(), time.Nanosecond)
		if own.Timeout <= 0 || own.Timeout.Std() > left {
			own.Timeout = plan.Duration(left)
		}
	}
	return own
}

// Stage returns the accountant a stage runs under: own (the stage's own
// budget, e.g. its agent's) with every limit lowered as Limits lowers it,
// except that a limit with nothing left allows exactly nothing, where
// Limits has to say 1 (a plan.Budget's 0 is unlimited). So stages run one
// after another pass no aggregate limit, counted or not; side by side they
// pass one by no more than what they use beyond their estimates. Settle
// the reservation with the stage accountant's Usage when the stage ends.
func (r *Reservation) Stage(own plan.Budget, opts ...Option) *Accountant {
	return r.Allowance(own).Accountant(opts...)
}

// Allowance is what a stage may use, as a value that crosses a process
// boundary: a stage run elsewhere (a best-of-N candidate as a Temporal
// child workflow) runs under Allowance.Accountant, and its holder settles
// the reservation with that accountant's Usage.
type Allowance struct {
	// Limits are the stage's limits (Reservation.Limits).
	Limits plan.Budget `json:"limits"`
	// Floor is what the stage's accountant counts as used from the start
	// and never reports: 1 for a limit with nothing left (see Stage).
	Floor Usage `json:"floor"`
	// Base is what a share's accountant (Share) counts as used from the
	// start and leaves out of its Usage, though not out of its errors:
	// where its holder's accountant stood, less the floor, with the time
	// its holder had run as Elapsed.
	Base Usage `json:"base,omitzero"`
}

// Allowance is the allowance of a stage whose own budget is own, as Stage
// gives it now.
func (r *Reservation) Allowance(own plan.Budget) Allowance {
	a := r.a
	a.mu.Lock()
	t := r.othersHold()
	lim := r.limits(own, t)
	b := a.b
	a.mu.Unlock()
	var floor Usage
	empty := func(limit, used int64, f *int64) {
		if limit > 0 && used >= limit {
			*f = 1
		}
	}
	empty(b.MaxIterations, t.Iterations, &floor.Iterations)
	empty(b.MaxModelCalls, t.ModelCalls, &floor.ModelCalls)
	empty(b.MaxToolCalls, t.ToolCalls, &floor.ToolCalls)
	empty(b.MaxToolRounds, t.ToolRounds, &floor.ToolRounds)
	empty(b.MaxReflectionAttempts, t.ReflectionAttempts, &floor.ReflectionAttempts)
	empty(b.MaxPlanSteps, t.PlanSteps, &floor.PlanSteps)
	empty(b.MaxPromptTokens, t.PromptTokens, &floor.PromptTokens)
	empty(b.MaxCompletionTokens, t.CompletionTokens, &floor.CompletionTokens)
	empty(b.MaxTotalTokens, t.TotalTokens, &floor.TotalTokens)
	return Allowance{Limits: lim, Floor: floor}
}

// Accountant is a new accountant for the allowance; its timeout starts now
// (after Base.Elapsed, for a share).
func (al Allowance) Accountant(opts ...Option) *Accountant {
	s := New(al.Limits, opts...)
	s.floor, s.base = al.Floor, al.Base
	s.used, _ = al.Floor.add(al.Base)
	return s
}

// Share is the allowance of a stage that runs as part of this
// reservation's holder rather than beside it: a delegation run elsewhere (a
// Temporal child workflow), which a local run gives its own accountant to
// share. The share's accountant has the holder's limits and starts where
// the holder's accountant stands (what it used, what other reservations
// hold, the time it has run), so it may use exactly what the holder has
// left, and a limit that stops it reads as it would have read here. Its
// Usage is what the stage used itself: settle the reservation with it
// (SettleShare).
func (r *Reservation) Share() Allowance {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	base := r.othersHold().sub(a.floor)
	base.Elapsed = a.elapsed()
	return Allowance{Limits: a.b, Floor: a.floor, Base: base}
}

// SettleShare settles a share (Share) with what the stage used, and takes
// the budget error that stopped the stage, if one did, as this
// accountant's own unless it has one already: the share counted in this
// accountant's terms, so the error is the one a stage sharing this
// accountant would have left here (a limit refused before it was passed
// leaves no usage over it for Settle to find).
func (r *Reservation) SettleShare(actual Usage, stopped *Exceeded) error {
	if err := r.Settle(actual); err != nil || stopped == nil {
		return err
	}
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = stopped // already without the floor: not fail
	}
	return a.err
}

// firstPassed returns the first limit that u passes, in the order of
// plan.Budget's fields. With preflight set, u is what usage would become.
func (a *Accountant) firstPassed(u Usage, preflight bool) *Exceeded {
	for _, l := range []struct {
		name      string
		max, used int64
	}{
		{MaxIterations, a.b.MaxIterations, u.Iterations},
		{MaxModelCalls, a.b.MaxModelCalls, u.ModelCalls},
		{MaxToolCalls, a.b.MaxToolCalls, u.ToolCalls},
		{MaxToolRounds, a.b.MaxToolRounds, u.ToolRounds},
		{MaxReflectionAttempts, a.b.MaxReflectionAttempts, u.ReflectionAttempts},
		{MaxPlanSteps, a.b.MaxPlanSteps, u.PlanSteps},
		{MaxPromptTokens, a.b.MaxPromptTokens, u.PromptTokens},
		{MaxCompletionTokens, a.b.MaxCompletionTokens, u.CompletionTokens},
		{MaxTotalTokens, a.b.MaxTotalTokens, u.TotalTokens},
	} {
		if l.max > 0 && l.used > l.max {
			return &Exceeded{Limit: l.name, Max: float64(l.max), Used: float64(l.used), Preflight: preflight}
		}
	}
	if m := a.b.MaxCostUSD; m > 0 && u.CostUSD > m {
		return &Exceeded{Limit: MaxCostUSD, Max: m, Used: u.CostUSD, Preflight: preflight}
	}
	return nil
}

// normalize makes reported usage safe to add: a negative figure is
// replaced by its estimate, and a total below prompt + completion is raised
// to the sum.
func normalize(u, est Usage) Usage {
	u.Iterations = nonNegative(u.Iterations, est.Iterations)
	u.ModelCalls = nonNegative(u.ModelCalls, est.ModelCalls)
	u.ToolCalls = nonNegative(u.ToolCalls, est.ToolCalls)
	u.ToolRounds = nonNegative(u.ToolRounds, est.ToolRounds)
	u.ReflectionAttempts = nonNegative(u.ReflectionAttempts, est.ReflectionAttempts)
	u.PlanSteps = nonNegative(u.PlanSteps, est.PlanSteps)
	u.PromptTokens = nonNegative(u.PromptTokens, est.PromptTokens)
	u.CompletionTokens = nonNegative(u.CompletionTokens, est.CompletionTokens)
	sum, _ := satAdd(u.PromptTokens, u.CompletionTokens)
	u.TotalTokens = max(u.TotalTokens, sum)
	u.Elapsed = 0
	return u
}

func validUsage(u Usage) bool {
	return u.Iterations >= 0 && u.ModelCalls >= 0 && u.ToolCalls >= 0 && u.ToolRounds >= 0 &&
		u.ReflectionAttempts >= 0 && u.PlanSteps >= 0 && u.PromptTokens >= 0 &&
		u.CompletionTokens >= 0 && u.TotalTokens >= 0 && validCost(u.CostUSD)
}
