package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// Option configures an Accountant.
type Option func(*Accountant)

// WithClock sets the clock the timeout is measured with (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(a *Accountant) { a.now = now }
}

// WithUsed starts the accountant with usage already consumed, for a run
// resumed from its journal: the budget covers the whole run, not each
// attempt. Its Elapsed counts against the timeout.
func WithUsed(u Usage) Option {
	return func(a *Accountant) { a.used = u }
}

// Accountant enforces one plan.Budget. It is safe for concurrent use; one
// Accountant shared by best-of-N candidates is their aggregate budget.
type Accountant struct {
	b     plan.Budget
	now   func() time.Time
	start time.Time

	mu       sync.Mutex
	used     Usage // Elapsed holds time from earlier attempts only
	reserved Usage
	err      error
	// floor is what used starts with that was never used: a stage's limit
	// with nothing left is 1 with 1 used (a limit of 0 would be
	// unlimited). Usage leaves it out, and so do the errors (Reservation.Stage).
	floor Usage
	// base is what used starts with that the holder of a share used
	// (Reservation.Share). Usage leaves it out; the errors keep it.
	base Usage
}

// New returns an accountant for b; the timeout starts now. A zero field is
// unlimited; the compiler has already filled the documented defaults.
func New(b plan.Budget, opts ...Option) *Accountant {
	a := &Accountant{b: b, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	a.start = a.now()
	return a
}

// Budget returns the limits being enforced.
func (a *Accountant) Budget() plan.Budget { return a.b }

func (a *Accountant) elapsed() time.Duration {
	return a.used.Elapsed + a.now().Sub(a.start)
}

// fail records err as the budget error unless one is already recorded, and
// returns the recorded one: the first limit hit is the one reported.
func (a *Accountant) fail(err error) error {
	if a.err == nil {
		if ex, ok := err.(*Exceeded); ok {
			if f := float64(a.floor.count(ex.Limit)); f > 0 {
				ex.Max -= f
				ex.Used -= f
			}
		}
		a.err = err
	}
	return a.err
}

// check returns the sticky error, or the timeout if it has passed.
func (a *Accountant) check() error {
	if a.err != nil {
		return a.err
	}
	if t := a.b.Timeout.Std(); t > 0 {
		if e := a.elapsed(); e >= t {
			return a.fail(&Exceeded{Limit: Timeout, Max: t.Seconds(), Used: e.Seconds()})
		}
	}
	return nil
}

// Err returns the first budget error of the run, or nil. Once set it never
// changes.
func (a *Accountant) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.check()
}

// count adds n to one counter if the limit allows it.
func (a *Accountant) count(limit string, most int64, field func(*Usage) *int64, n int64) error {
	if n < 0 {
		return fmt.Errorf("budget: cannot count %d against %s", n, limit)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return err
	}
	cur := field(&a.used)
	want, over := satAdd(*cur, n)
	if most > 0 && want > most {
		return a.fail(&Exceeded{Limit: limit, Max: float64(most), Used: float64(want), Preflight: true})
	}
	if over {
		return a.fail(fmt.Errorf("%w: %s count overflows", ErrInvalidUsage, limit))
	}
	*cur = want
	return nil
}

// Iteration counts the start of a loop iteration against max_iterations.
func (a *Accountant) Iteration() error {
	return a.count(MaxIterations, a.b.MaxIterations, func(u *Usage) *int64 { return &u.Iterations }, 1)
}

// ToolCall counts one tool call against max_tool_calls, before dispatch.
func (a *Accountant) ToolCall() error { return a.ReserveToolCalls(1) }

// ReserveToolCalls counts n tool calls dispatched together: all of them fit
// or none is counted.
func (a *Accountant) ReserveToolCalls(n int) error {
	return a.count(MaxToolCalls, a.b.MaxToolCalls, func(u *Usage) *int64 { return &u.ToolCalls }, int64(n))
}

// ToolRound counts one round of tool dispatch (one Act phase with at least
// one tool call) against max_tool_rounds.
func (a *Accountant) ToolRound() error {
	return a.count(MaxToolRounds, a.b.MaxToolRounds, func(u *Usage) *int64 { return &u.ToolRounds }, 1)
}

// ReflectionAttempt counts one reflect_and_retry evaluation against
// max_reflection_attempts.
func (a *Accountant) ReflectionAttempt() error {
	return a.count(MaxReflectionAttempts, a.b.MaxReflectionAttempts, func(u *Usage) *int64 { return &u.ReflectionAttempts }, 1)
}

// PlanStep counts one plan_execute step against max_plan_steps.
func (a *Accountant) PlanStep() error {
	return a.count(MaxPlanSteps, a.b.MaxPlanSteps, func(u *Usage) *int64 { return &u.PlanSteps }, 1)
}

// PlanStepsFit checks, without counting them, that n more plan steps fit
// under max_plan_steps: plan_execute checks a whole plan before its first
// step runs, so that a plan the budget cannot finish fails as the budget
// error it is rather than after some of its steps. The error is sticky
// like every budget error; the steps are counted as they start (PlanStep).
func (a *Accountant) PlanStepsFit(n int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return err
	}
	if m := a.b.MaxPlanSteps; m > 0 {
		if want, _ := satAdd(a.used.PlanSteps, int64(max(n, 0))); want > m {
			return a.fail(&Exceeded{Limit: MaxPlanSteps, Max: float64(m), Used: float64(want), Preflight: true})
		}
	}
	return nil
}

// Reservation is a model call's share of the budget, held from before the
// call starts until Commit or Release.
type Reservation struct {
	a       *Accountant
	pricing *plan.Pricing
	amount  Usage
	stage   bool // from ReserveStage rather than ReserveModelCall
	// out is the output the call may stream (ReserveModelCall's cap).
	out outputCap
	// guarded by a.mu
	settled  bool
	streamed int64          // output tokens streamed so far, estimated (Streamed)
	counted  provider.Usage // what Commit or Release counted for the call
}

// outputCap is the most output a model call may produce, and the limit that
// set it: the caller's max_output_tokens, or what max_completion_tokens,
// max_total_tokens or max_cost_usd had left when the call was reserved.
// base is what the limit had already taken (other calls, the prompt); each
// output token adds unit to it (1, or its price under max_cost_usd).
type outputCap struct {
	tokens     int64 // math.MaxInt64: unbounded
	limit      string
	max        float64
	base, unit float64
}

// Estimate is what the reservation holds: one model call, the estimated
// prompt tokens, the estimated output tokens and their cost.
func (r *Reservation) Estimate() Usage { return r.amount }

// OutputEstimate is how many completion tokens a call sent with
// maxOutputTokens is estimated to produce, as ReserveModelCall reserves
// them: the smaller of maxOutputTokens and the budget's
// estimated_output_tokens_per_call, whichever are set (0 when neither is).
// A router prices its candidates with it, so that the model it picks is
// judged by the estimate the reservation then holds, not by the cap.
func (a *Accountant) OutputEstimate(maxOutputTokens int) int64 {
	return a.outputEstimate(max(int64(maxOutputTokens), 0))
}

// outputEstimate is OutputEstimate of a non-negative cap.
func (a *Accountant) outputEstimate(maxOutput int64) int64 {
	est := a.b.EstimatedOutputTokensPerCall
	switch {
	case est <= 0:
		return maxOutput
	case maxOutput > 0:
		return min(est, maxOutput)
	}
	return est
}

// ReserveModelCall reserves one model call before it starts. It estimates
// the call as estimatedPromptTokens plus the output estimate (see
// outputEstimate) and refuses it, naming the limit, when the call could not
// fit: no call left, the prompt alone over max_prompt_tokens, or no room
// for even one output token under max_completion_tokens, max_total_tokens
// or max_cost_usd. It returns the max_output_tokens to send: maxOutputTokens
// lowered to what those limits still allow (0 when neither the caller nor a
// limit bounds it), so the provider cannot overshoot.
func (a *Accountant) ReserveModelCall(estimatedPromptTokens int64, maxOutputTokens int, pricing *plan.Pricing) (*Reservation, int, error) {
	prompt := max(estimatedPromptTokens, 0)
	maxOut := max(int64(maxOutputTokens), 0)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check(); err != nil {
		return nil, 0, err
	}
	if a.b.MaxCostUSD > 0 && pricing == nil {
		return nil, 0, ErrUnpriced
	}
	t, _ := a.used.add(a.reserved)
	exceeded := func(limit string, max, used float64) error {
		return a.fail(&Exceeded{Limit: limit, Max: max, Used: used, Preflight: true})
	}
	if m := a.b.MaxModelCalls; m > 0 && t.ModelCalls >= m {
		return nil, 0, exceeded(MaxModelCalls, float64(m), float64(t.ModelCalls)+1)
	}
	if m := a.b.MaxPromptTokens; m > 0 {
		if p, _ := satAdd(t.PromptTokens, prompt); p > m {
			return nil, 0, exceeded(MaxPromptTokens, float64(m), float64(p))
		}
	}
	capped := outputCap{tokens: math.MaxInt64}
	lower := func(left int64, limit string, max, base, unit float64) {
		if left < capped.tokens {
			capped = outputCap{tokens: left, limit: limit, max: max, base: base, unit: unit}
		}
	}
	if maxOut > 0 {
		lower(maxOut, MaxOutputTokens, float64(maxOut), 0, 1)
	}
	if m := a.b.MaxCompletionTokens; m > 0 {
		left := m - t.CompletionTokens
		if left <= 0 {
			return nil, 0, exceeded(MaxCompletionTokens, float64(m), float64(t.CompletionTokens)+1)
		}
		lower(left, MaxCompletionTokens, float64(m), float64(t.CompletionTokens), 1)
	}
	if m := a.b.MaxTotalTokens; m > 0 {
		withPrompt, _ := satAdd(t.TotalTokens, prompt)
		left := m - withPrompt
		if left <= 0 {
			return nil, 0, exceeded(MaxTotalTokens, float64(m), float64(withPrompt)+1)
		}
		lower(left, MaxTotalTokens, float64(m), float64(withPrompt), 1)
	}
	if pricing != nil && !validPricing(pricing) {
		return nil, 0, a.fail(fmt.Errorf("%w: pricing %+v is negative or not finite", ErrInvalidUsage, *pricing))
	}
	promptCost := Cost(pricing, prompt, 0)
	if m := a.b.MaxCostUSD; m > 0 {
		left := m - t.CostUSD - promptCost
		perToken := Cost(pricing, 0, 1)
		if left < 0 || (perToken > 0 && left < perToken) {
			return nil, 0, exceeded(MaxCostUSD, m, t.CostUSD+promptCost+perToken)
		}
		if perToken > 0 {
			lower(int64(min(left/perToken, math.MaxInt64/2)), MaxCostUSD, m, t.CostUSD+promptCost, perToken)
		}
	}
	outCap := capped.tokens
	out := a.outputEstimate(maxOut)
	if outCap != math.MaxInt64 {
		out = min(out, outCap)
	}
	total, _ := satAdd(prompt, out)
	r := &Reservation{a: a, pricing: pricing, out: capped, amount: Usage{
		ModelCalls:       1,
		PromptTokens:     prompt,
		CompletionTokens: out,
		TotalTokens:      total,
		CostUSD:          Cost(pricing, prompt, out),
	}}
	a.reserved, _ = a.reserved.add(r.amount)
	send := maxOutputTokens
	if outCap != math.MaxInt64 {
		send = int(min(outCap, math.MaxInt32))
	}
	return r, send, nil
}

// errSettled is returned when a reservation is committed or released twice.
var errSettled = errors.New("budget: reservation already settled")

// Streamed tells the reservation how many output tokens its call has
// streamed so far: an estimate from the text as it arrives
// (stdlib.TokenCounter), since a provider reports usage only at the end, if
// at all. It returns the budget error once the estimate passes the call's
// allowance — the output cap ReserveModelCall returned, with room for the
// estimate's error: half as much again, plus 64 tokens, so a model that
// keeps to max_output_tokens is not cut off — naming the limit that set
// the cap (MaxOutputTokens when it was the caller's own max_output_tokens).
// The caller then stops the call. The error is sticky like every budget
// error, and so is one that ended the run meanwhile, which Streamed
// returns too. What was streamed counts when the call ends without usage
// (Commit with known false, Release).
func (r *Reservation) Streamed(tokens int64) error {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.settled {
		return errSettled
	}
	r.streamed = max(r.streamed, tokens)
	if err := a.check(); err != nil {
		return err
	}
	c := r.out
	if c.tokens == math.MaxInt64 {
		return nil
	}
	allowed, _ := satAdd(c.tokens, c.tokens/2)
	allowed, _ = satAdd(allowed, streamSlack)
	if r.streamed <= allowed {
		return nil
	}
	return a.fail(&Exceeded{Limit: c.limit, Max: c.max, Used: c.base + float64(r.streamed)*c.unit, Preflight: true})
}

// streamSlack is the part of a streamed call's allowance that does not
// grow with its cap: a short answer's estimate is the least exact.
const streamSlack = 64

// Commit reconciles the reservation with what the provider reported and
// records it. With known usage, a total smaller than prompt + completion is
// raised to that sum (a malformed report must not reopen spent capacity)
// and a negative component is replaced by its estimate; with unknown usage
// the estimate stands, or what the call streamed (Streamed) when that is
// more. The usage is recorded even when it overshoots a limit; Commit then
// returns the run's budget error. Stage reservations (ReserveStage) are
// settled with Settle, which takes every figure.
func (r *Reservation) Commit(u provider.Usage, known bool) error {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.settled {
		return errSettled
	}
	r.settled = true
	a.reserved = a.reserved.sub(r.amount)
	actual := r.amount
	switch {
	case known:
		actual.PromptTokens = nonNegative(u.PromptTokens, r.amount.PromptTokens)
		actual.CompletionTokens = nonNegative(u.CompletionTokens, r.amount.CompletionTokens)
		sum, _ := satAdd(actual.PromptTokens, actual.CompletionTokens)
		actual.TotalTokens = max(u.TotalTokens, sum)
		read := min(max(u.CacheReadTokens, 0), actual.PromptTokens)
		r.counted = provider.Usage{
			PromptTokens: actual.PromptTokens, CompletionTokens: actual.CompletionTokens, TotalTokens: actual.TotalTokens,
			CacheReadTokens: read, CacheWriteTokens: min(max(u.CacheWriteTokens, 0), actual.PromptTokens-read),
		}
		actual.CostUSD = CallCost(r.pricing, r.counted)
		return a.record(actual)
	case r.streamed > actual.CompletionTokens:
		actual = r.streamedUsage()
	}
	r.counted = provider.Usage{PromptTokens: actual.PromptTokens, CompletionTokens: actual.CompletionTokens, TotalTokens: actual.TotalTokens}
	return a.record(actual)
}

// Counted is what Commit counted for the call, in the provider's terms: the
// reported usage reconciled as Commit describes (a negative figure replaced
// by its estimate, the total raised to prompt + completion, the cache
// counts held within the prompt), or the estimate when the provider
// reported none. Its CallCost is the cost Commit counted. The journal
// records this, so that a journal's figures are the budget's. Zero before
// the reservation is committed.
func (r *Reservation) Counted() provider.Usage {
	r.a.mu.Lock()
	defer r.a.mu.Unlock()
	return r.counted
}

// streamedUsage is one call of the estimated prompt and the output it
// streamed.
func (r *Reservation) streamedUsage() Usage {
	total, _ := satAdd(r.amount.PromptTokens, r.streamed)
	return Usage{
		ModelCalls:       1,
		PromptTokens:     r.amount.PromptTokens,
		CompletionTokens: r.streamed,
		TotalTokens:      total,
		CostUSD:          Cost(r.pricing, r.amount.PromptTokens, r.streamed),
	}
}

// record adds a settled call's usage and returns the budget error when a
// limit is now passed. a.mu is held.
func (a *Accountant) record(actual Usage) error {
	if !validCost(actual.CostUSD) {
		return a.fail(fmt.Errorf("%w: call cost %v", ErrInvalidUsage, actual.CostUSD))
	}
	used, over := a.used.add(actual)
	a.used = used
	if over {
		return a.fail(fmt.Errorf("%w: token count overflows", ErrInvalidUsage))
	}
	if !validCost(used.CostUSD) {
		return a.fail(fmt.Errorf("%w: total cost %v", ErrInvalidUsage, used.CostUSD))
	}
	for _, l := range []struct {
		name string
		max  int64
		used int64
	}{
		{MaxPromptTokens, a.b.MaxPromptTokens, used.PromptTokens},
		{MaxCompletionTokens, a.b.MaxCompletionTokens, used.CompletionTokens},
		{MaxTotalTokens, a.b.MaxTotalTokens, used.TotalTokens},
	} {
		if l.max > 0 && l.used > l.max {
			return a.fail(&Exceeded{Limit: l.name, Max: float64(l.max), Used: float64(l.used)})
		}
	}
	if m := a.b.MaxCostUSD; m > 0 && used.CostUSD > m {
		return a.fail(&Exceeded{Limit: MaxCostUSD, Max: m, Used: used.CostUSD})
	}
	return a.err
}

// validPricing reports whether every price is finite and not negative.
func validPricing(p *plan.Pricing) bool {
	ok := validCost(p.InputUSDPerMTok) && validCost(p.OutputUSDPerMTok)
	for _, c := range []*float64{p.CacheReadUSDPerMTok, p.CacheWriteUSDPerMTok} {
		ok = ok && (c == nil || validCost(*c))
	}
	return ok
}

func nonNegative(v, fallback int64) int64 {
	if v < 0 {
		return fallback
	}
	return v
}

// Release ends a reservation whose call failed without usage. The call
// still counts against max_model_calls, so a model that keeps failing
// cannot be called without bound. It adds no tokens or cost when nothing
// was streamed: the provider reported none and does not bill a request
// that produced nothing. A call that failed after streaming output (cut
// off by Streamed's budget error, by the response byte cap, by a broken
// connection) counts its estimated prompt and what it streamed, as the
// provider bills them; a limit that passes is the run's budget error from
// then on. A call that failed after reporting usage (a stream cut after
// its usage chunk) should be committed instead. Releasing a stage
// reservation (ReserveStage) counts nothing: the stage never ran.
func (r *Reservation) Release() {
	a := r.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.settled {
		return
	}
	r.settled = true
	a.reserved = a.reserved.sub(r.amount)
	switch {
	case r.stage:
	case r.streamed > 0:
		_ = a.record(r.streamedUsage())
	default:
		a.used.ModelCalls, _ = satAdd(a.used.ModelCalls, 1)
	}
}

// Usage returns what has been consumed so far (reservations in flight not
// included) and the time elapsed.
func (a *Accountant) Usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.used.sub(a.floor).sub(a.base)
	u.Elapsed = a.elapsed() - a.base.Elapsed
	return u
}

// Reserved returns what calls in flight hold.
func (a *Accountant) Reserved() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reserved
}

// Remaining returns what is left of each limit, counting reservations in
// flight as spent.
func (a *Accountant) Remaining() Remaining {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, _ := a.used.add(a.reserved)
	left := func(limit, used int64) int64 {
		if limit <= 0 {
			return Unlimited
		}
		return max(limit-used, 0)
	}
	r := Remaining{
		Iterations:         left(a.b.MaxIterations, t.Iterations),
		ModelCalls:         left(a.b.MaxModelCalls, t.ModelCalls),
		ToolCalls:          left(a.b.MaxToolCalls, t.ToolCalls),
		ToolRounds:         left(a.b.MaxToolRounds, t.ToolRounds),
		ReflectionAttempts: left(a.b.MaxReflectionAttempts, t.ReflectionAttempts),
		PlanSteps:          left(a.b.MaxPlanSteps, t.PlanSteps),
		PromptTokens:       left(a.b.MaxPromptTokens, t.PromptTokens),
		CompletionTokens:   left(a.b.MaxCompletionTokens, t.CompletionTokens),
		TotalTokens:        left(a.b.MaxTotalTokens, t.TotalTokens),
		CostUSD:            Unlimited,
		Time:               Unlimited,
	}
	if m := a.b.MaxCostUSD; m > 0 {
		r.CostUSD = max(m-t.CostUSD, 0)
	}
	if d := a.b.Timeout.Std(); d > 0 {
		r.Time = max(d-a.elapsed(), 0)
	}
	return r
}

// Context returns a context that ends when the budget's timeout passes;
// ErrFromContext then gives the *Exceeded{Limit: "timeout"}. Without a
// timeout it only adds a cancel function.
func (a *Accountant) Context(parent context.Context) (context.Context, context.CancelFunc) {
	d := a.b.Timeout.Std()
	if d <= 0 {
		return context.WithCancel(parent)
	}
	a.mu.Lock()
	left := d - a.elapsed()
	a.mu.Unlock()
	cause := &Exceeded{Limit: Timeout, Max: d.Seconds(), Used: d.Seconds()}
	return context.WithTimeoutCause(parent, left, cause)
}

// ErrFromContext returns the budget error that ended ctx (a timeout from
// Accountant.Context), or ctx.Err() when it ended for another reason, or
// nil while it is live.
func ErrFromContext(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	var ex *Exceeded
	if cause := context.Cause(ctx); errors.As(cause, &ex) {
		return ex
	}
	return ctx.Err()
}
