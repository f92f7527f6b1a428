package budget

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

var t0 = time.Date(2026, 12, 2, 13, 30, 0, 0, time.UTC)

// clock is a fake clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newAt(b plan.Budget, opts ...Option) (*Accountant, *clock) {
	c := &clock{now: t0}
	return New(b, append([]Option{WithClock(c.Now)}, opts...)...), c
}

func usage(p, c, t int64) provider.Usage {
	return provider.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: t}
}

// wantExceeded checks err is the named limit with the given figures.
func wantExceeded(t *testing.T, err error, limit string, max, used float64, preflight bool) {
	t.Helper()
	var ex *Exceeded
	if !errors.As(err, &ex) {
		t.Fatalf("err = %v, want *Exceeded %s", err, limit)
	}
	want := Exceeded{Limit: limit, Max: max, Used: used, Preflight: preflight}
	if diff := cmp.Diff(want, *ex); diff != "" {
		t.Errorf("exceeded (-want +got):\n%s", diff)
	}
	if !errors.Is(err, &Exceeded{Limit: limit}) || !errors.Is(err, &Exceeded{}) || errors.Is(err, &Exceeded{Limit: "other"}) {
		t.Errorf("errors.Is does not match %v by limit", err)
	}
	if !strings.Contains(err.Error(), limit) {
		t.Errorf("message %q does not name %s", err, limit)
	}
}

func TestCounters(t *testing.T) {
	tests := []struct {
		limit string
		set   func(*plan.Budget)
		call  func(*Accountant) error
		used  func(Usage) int64
	}{
		{MaxIterations, func(b *plan.Budget) { b.MaxIterations = 3 }, (*Accountant).Iteration, func(u Usage) int64 { return u.Iterations }},
		{MaxToolCalls, func(b *plan.Budget) { b.MaxToolCalls = 3 }, (*Accountant).ToolCall, func(u Usage) int64 { return u.ToolCalls }},
		{MaxToolRounds, func(b *plan.Budget) { b.MaxToolRounds = 3 }, (*Accountant).ToolRound, func(u Usage) int64 { return u.ToolRounds }},
		{MaxReflectionAttempts, func(b *plan.Budget) { b.MaxReflectionAttempts = 3 }, (*Accountant).ReflectionAttempt, func(u Usage) int64 { return u.ReflectionAttempts }},
		{MaxPlanSteps, func(b *plan.Budget) { b.MaxPlanSteps = 3 }, (*Accountant).PlanStep, func(u Usage) int64 { return u.PlanSteps }},
	}
	for _, tt := range tests {
		t.Run(tt.limit, func(t *testing.T) {
			var b plan.Budget
			tt.set(&b)
			a, _ := newAt(b)
			for i := range 3 {
				if err := tt.call(a); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
			err := tt.call(a)
			wantExceeded(t, err, tt.limit, 3, 4, true)
			if got := tt.used(a.Usage()); got != 3 {
				t.Errorf("a refused call was counted: used %d", got)
			}
			if a.Err() != err {
				t.Errorf("Err() = %v, want the sticky %v", a.Err(), err)
			}
			// Every other counter now reports the same first error.
			if err2 := a.Iteration(); err2 != err {
				t.Errorf("after the limit: %v", err2)
			}
			if _, _, err2 := a.ReserveModelCall(1, 1, nil); err2 != err {
				t.Errorf("reserve after the limit: %v", err2)
			}
		})
	}
}

func TestUnlimited(t *testing.T) {
	a, _ := newAt(plan.Budget{})
	for range 1000 {
		if err := errors.Join(a.Iteration(), a.ToolCall(), a.ToolRound(), a.ReflectionAttempt(), a.PlanStep()); err != nil {
			t.Fatal(err)
		}
		r, send, err := a.ReserveModelCall(1000, 0, nil)
		if err != nil || send != 0 {
			t.Fatalf("reserve: %d, %v", send, err)
		}
		if err := r.Commit(usage(1000, 10, 1010), true); err != nil {
			t.Fatal(err)
		}
	}
	r := a.Remaining()
	if r.TotalTokens != Unlimited || r.CostUSD != Unlimited || r.Time != Unlimited || r.Iterations != Unlimited {
		t.Errorf("Remaining = %+v", r)
	}
}

func TestReserveToolCallsAllOrNothing(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxToolCalls: 5})
	if err := a.ReserveToolCalls(3); err != nil {
		t.Fatal(err)
	}
	wantExceeded(t, a.ReserveToolCalls(3), MaxToolCalls, 5, 6, true)
	if a.Usage().ToolCalls != 3 {
		t.Errorf("tool calls = %d, want 3", a.Usage().ToolCalls)
	}
	if err := (&Accountant{}).ReserveToolCalls(-1); err == nil {
		t.Error("a negative count was accepted")
	}
}

func TestMaxModelCalls(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxModelCalls: 2})
	r1, _, err := a.ReserveModelCall(10, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A reservation in flight holds its call: the third is refused even
	// before the first two finish.
	r2, _, err := a.ReserveModelCall(10, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Remaining().ModelCalls != 0 {
		t.Errorf("remaining calls = %d", a.Remaining().ModelCalls)
	}
	r1.Commit(usage(10, 10, 20), true)
	r2.Release()
	_, _, err = a.ReserveModelCall(10, 10, nil)
	wantExceeded(t, err, MaxModelCalls, 2, 3, true)
	if u := a.Usage(); u.ModelCalls != 2 {
		t.Errorf("model calls = %d", u.ModelCalls)
	}
}

func TestMaxPromptTokens(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxPromptTokens: 100})
	r, _, err := a.ReserveModelCall(60, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Commit(usage(60, 5, 65), true)
	_, _, err = a.ReserveModelCall(41, 0, nil)
	wantExceeded(t, err, MaxPromptTokens, 100, 101, true)
	if !strings.Contains(err.Error(), "budget exceeded: max_prompt_tokens (limit 100, would use 101)") {
		t.Errorf("message %q", err)
	}
}

func TestPromptExactlyAtLimit(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxPromptTokens: 100})
	r, _, err := a.ReserveModelCall(100, 0, nil)
	if err != nil {
		t.Fatalf("a prompt of exactly the limit: %v", err)
	}
	if err := r.Commit(usage(100, 1, 101), true); err != nil {
		t.Fatalf("usage of exactly the limit: %v", err)
	}
}

func TestMaxCompletionTokensCapsOutput(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxCompletionTokens: 100, EstimatedOutputTokensPerCall: 512})
	r, send, err := a.ReserveModelCall(1000, 4096, nil)
	if err != nil || send != 100 {
		t.Fatalf("reserve: send %d, %v; want 100", send, err)
	}
	if got := r.Estimate().CompletionTokens; got != 100 {
		t.Errorf("reserved output %d, want 100 (the cap)", got)
	}
	if err := r.Commit(usage(1000, 100, 1100), true); err != nil {
		t.Fatal(err)
	}
	_, _, err = a.ReserveModelCall(10, 4096, nil)
	wantExceeded(t, err, MaxCompletionTokens, 100, 101, true)
}

func TestMaxTotalTokens(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxTotalTokens: 1000, EstimatedOutputTokensPerCall: 512})
	r, send, err := a.ReserveModelCall(900, 4096, nil)
	if err != nil || send != 100 {
		t.Fatalf("reserve: send %d, %v; want 100", send, err)
	}
	if err := r.Commit(usage(900, 100, 1000), true); err != nil {
		t.Fatalf("usage of exactly the limit: %v", err)
	}
	_, _, err = a.ReserveModelCall(0, 4096, nil)
	wantExceeded(t, err, MaxTotalTokens, 1000, 1001, true)

	// A prompt that leaves no room for one output token is refused.
	b, _ := newAt(plan.Budget{MaxTotalTokens: 1000})
	_, _, err = b.ReserveModelCall(1000, 10, nil)
	wantExceeded(t, err, MaxTotalTokens, 1000, 1001, true)
}

func TestCommitOvershootIsReported(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxTotalTokens: 100000})
	r, _, err := a.ReserveModelCall(99000, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The estimate was low: the provider counted more prompt tokens.
	err = r.Commit(usage(99512, 1000, 100512), true)
	wantExceeded(t, err, MaxTotalTokens, 100000, 100512, false)
	if err.Error() != "budget exceeded: max_total_tokens (limit 100000, used 100512)" {
		t.Errorf("message %q", err)
	}
	if a.Usage().TotalTokens != 100512 {
		t.Errorf("overshooting usage was not recorded: %d", a.Usage().TotalTokens)
	}
}

func TestCostLimit(t *testing.T) {
	pricing := &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 2} // $1e-6 in, $2e-6 out per token
	a, _ := newAt(plan.Budget{MaxCostUSD: 0.01})
	// 5000 prompt tokens cost $0.005; $0.005 left buys 2500 output tokens.
	r, send, err := a.ReserveModelCall(5000, 4096, pricing)
	if err != nil || send != 2500 {
		t.Fatalf("reserve: send %d, %v; want 2500", send, err)
	}
	if got := r.Estimate().CostUSD; math.Abs(got-0.01) > 1e-12 {
		t.Errorf("reserved cost %v", got)
	}
	if err := r.Commit(usage(5000, 2000, 7000), true); err != nil {
		t.Fatal(err)
	}
	if got := a.Usage().CostUSD; math.Abs(got-0.009) > 1e-12 {
		t.Errorf("cost = %v, want 0.009", got)
	}
	_, _, err = a.ReserveModelCall(1000, 100, pricing)
	var ex *Exceeded
	if !errors.As(err, &ex) || ex.Limit != MaxCostUSD || !ex.Preflight || !strings.Contains(err.Error(), "limit $0.01") {
		t.Fatalf("err = %v", err)
	}

	if _, _, err := New(plan.Budget{MaxCostUSD: 1}).ReserveModelCall(1, 1, nil); !errors.Is(err, ErrUnpriced) {
		t.Errorf("unpriced model: %v", err)
	}
	u := New(plan.Budget{MaxCostUSD: 1})
	u.ReserveModelCall(1, 1, nil)
	if u.Err() != nil {
		t.Errorf("ErrUnpriced became sticky: %v", u.Err())
	}
}

func TestCostOvershootOnCommit(t *testing.T) {
	pricing := &plan.Pricing{InputUSDPerMTok: 1e6, OutputUSDPerMTok: 1e6} // $1 a token
	a, _ := newAt(plan.Budget{MaxCostUSD: 10})
	r, send, err := a.ReserveModelCall(5, 100, pricing)
	if err != nil || send != 5 {
		t.Fatalf("reserve: %d, %v", send, err)
	}
	wantExceeded(t, r.Commit(usage(6, 5, 11), true), MaxCostUSD, 10, 11, false)
}

func TestInvalidCost(t *testing.T) {
	for _, p := range []*plan.Pricing{
		{InputUSDPerMTok: -1},
		{OutputUSDPerMTok: math.NaN()},
		{InputUSDPerMTok: math.Inf(1)},
	} {
		a := New(plan.Budget{})
		_, _, err := a.ReserveModelCall(10, 10, p)
		if !errors.Is(err, ErrInvalidUsage) || a.Err() != err {
			t.Errorf("pricing %+v: %v", *p, err)
		}
	}
	// Huge but finite prices overflow to +Inf once summed.
	a := New(plan.Budget{})
	big := &plan.Pricing{InputUSDPerMTok: math.MaxFloat64, OutputUSDPerMTok: math.MaxFloat64}
	r, _, err := a.ReserveModelCall(0, 0, big)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(usage(10, 10, 20), true); !errors.Is(err, ErrInvalidUsage) {
		t.Errorf("infinite cost: %v", err)
	}
}

func TestSaturation(t *testing.T) {
	a, _ := newAt(plan.Budget{}, WithUsed(Usage{TotalTokens: math.MaxInt64 - 10, PromptTokens: math.MaxInt64 - 10}))
	r, _, err := a.ReserveModelCall(math.MaxInt64, math.MaxInt32, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Commit(usage(math.MaxInt64, math.MaxInt64, math.MaxInt64), true)
	if !errors.Is(err, ErrInvalidUsage) {
		t.Errorf("overflow: %v", err)
	}
	u := a.Usage()
	if u.TotalTokens != math.MaxInt64 || u.PromptTokens != math.MaxInt64 || u.CompletionTokens != math.MaxInt64 {
		t.Errorf("did not saturate: %+v", u)
	}
	if !errors.Is(a.Iteration(), ErrInvalidUsage) {
		t.Error("overflow is not sticky")
	}
	// Limits near the top of the range do not wrap either.
	b, _ := newAt(plan.Budget{MaxTotalTokens: math.MaxInt64}, WithUsed(Usage{TotalTokens: math.MaxInt64 - 1}))
	if _, _, err := b.ReserveModelCall(math.MaxInt64, 0, nil); !errors.Is(err, &Exceeded{Limit: MaxTotalTokens}) {
		t.Errorf("reserve past the top: %v", err)
	}
}

func TestOutputEstimate(t *testing.T) {
	tests := []struct {
		perCall int64
		maxOut  int
		want    int64
	}{
		{512, 4096, 512}, // the estimate, smaller than the cap
		{512, 100, 100},  // the cap, smaller than the estimate
		{512, 0, 512},
		{0, 300, 300},
		{0, 0, 0},
	}
	for _, tt := range tests {
		a := New(plan.Budget{EstimatedOutputTokensPerCall: tt.perCall})
		r, send, err := a.ReserveModelCall(50, tt.maxOut, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Estimate(); got.CompletionTokens != tt.want || got.TotalTokens != 50+tt.want || send != tt.maxOut {
			t.Errorf("per call %d, max %d: reserved %+v, send %d", tt.perCall, tt.maxOut, got, send)
		}
	}
}

func TestCommitReconciles(t *testing.T) {
	pricing := &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 1}
	tests := []struct {
		name  string
		u     provider.Usage
		known bool
		want  Usage
	}{
		{"known", usage(90, 30, 120), true, Usage{ModelCalls: 1, PromptTokens: 90, CompletionTokens: 30, TotalTokens: 120, CostUSD: 120e-6}},
		{"unknown keeps the estimate", usage(1, 1, 2), false, Usage{ModelCalls: 1, PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150, CostUSD: 150e-6}},
		{"small total raised", usage(90, 30, 7), true, Usage{ModelCalls: 1, PromptTokens: 90, CompletionTokens: 30, TotalTokens: 120, CostUSD: 120e-6}},
		{"larger total kept", usage(90, 30, 200), true, Usage{ModelCalls: 1, PromptTokens: 90, CompletionTokens: 30, TotalTokens: 200, CostUSD: 120e-6}},
		{"negative replaced by estimate", usage(-5, 30, 0), true, Usage{ModelCalls: 1, PromptTokens: 100, CompletionTokens: 30, TotalTokens: 130, CostUSD: 130e-6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newAt(plan.Budget{EstimatedOutputTokensPerCall: 50})
			r, _, err := a.ReserveModelCall(100, 0, pricing)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Reserved(); got.TotalTokens != 150 || got.ModelCalls != 1 {
				t.Errorf("reserved %+v", got)
			}
			if err := r.Commit(tt.u, tt.known); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, a.Usage(), cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-15 })); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			if got := a.Reserved(); got != (Usage{}) {
				t.Errorf("reservation left behind: %+v", got)
			}
			if err := r.Commit(tt.u, tt.known); err == nil {
				t.Error("a second Commit was accepted")
			}
			r.Release() // a no-op once settled
			if a.Usage().ModelCalls != 1 {
				t.Error("Release after Commit counted again")
			}
		})
	}
}

// A failed call counts against max_model_calls, so a failing model cannot
// be retried without bound, but adds no tokens or cost.
func TestReleaseCountsTheCall(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxModelCalls: 2, MaxTotalTokens: 1000})
	for range 2 {
		r, _, err := a.ReserveModelCall(400, 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	u := a.Usage()
	if u.ModelCalls != 2 || u.TotalTokens != 0 || a.Reserved() != (Usage{}) {
		t.Errorf("after two failed calls: used %+v, reserved %+v", u, a.Reserved())
	}
	_, _, err := a.ReserveModelCall(1, 1, nil)
	wantExceeded(t, err, MaxModelCalls, 2, 3, true)
}

func TestFirstErrorSticks(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxToolCalls: 1, MaxTotalTokens: 100})
	r, _, err := a.ReserveModelCall(50, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.ToolCall()
	first := a.ToolCall()
	wantExceeded(t, first, MaxToolCalls, 1, 2, true)
	// The call in flight overshoots later; the first error is still the one.
	if err := r.Commit(usage(200, 10, 210), true); err != first {
		t.Errorf("Commit returned %v, want the first error %v", err, first)
	}
	if a.Err() != first || a.Usage().TotalTokens != 210 {
		t.Errorf("Err() = %v, usage %+v", a.Err(), a.Usage())
	}
}

func TestTimeout(t *testing.T) {
	a, c := newAt(plan.Budget{Timeout: plan.Duration(5 * time.Minute)})
	c.Advance(5*time.Minute - time.Millisecond)
	if err := a.Iteration(); err != nil {
		t.Fatal(err)
	}
	if got := a.Remaining().Time; got != time.Millisecond {
		t.Errorf("time left %v", got)
	}
	c.Advance(time.Millisecond + 200*time.Millisecond)
	err := a.Iteration()
	wantExceeded(t, err, Timeout, 300, 300.2, false)
	if err.Error() != "budget exceeded: timeout (limit 5m0s, used 5m0.2s)" {
		t.Errorf("message %q", err)
	}
	if _, _, err2 := a.ReserveModelCall(1, 1, nil); err2 != err {
		t.Errorf("reserve after the timeout: %v", err2)
	}
}

func TestResumedTimeCounts(t *testing.T) {
	a, _ := newAt(plan.Budget{Timeout: plan.Duration(time.Minute)}, WithUsed(Usage{Elapsed: time.Minute}))
	wantExceeded(t, a.Err(), Timeout, 60, 60, false)
	ctx, cancel := a.Context(context.Background())
	defer cancel()
	<-ctx.Done()
	wantExceeded(t, ErrFromContext(ctx), Timeout, 60, 60, false)
}

func TestContext(t *testing.T) {
	a := New(plan.Budget{Timeout: plan.Duration(time.Millisecond)})
	ctx, cancel := a.Context(context.Background())
	defer cancel()
	if err := ErrFromContext(context.Background()); err != nil {
		t.Errorf("live context: %v", err)
	}
	<-ctx.Done()
	var ex *Exceeded
	if err := ErrFromContext(ctx); !errors.As(err, &ex) || ex.Limit != Timeout {
		t.Errorf("ErrFromContext = %v", err)
	}

	parent, stop := context.WithCancel(context.Background())
	ctx2, cancel2 := New(plan.Budget{Timeout: plan.Duration(time.Hour)}).Context(parent)
	defer cancel2()
	stop()
	if err := ErrFromContext(ctx2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled parent: %v", err)
	}
	ctx3, cancel3 := New(plan.Budget{}).Context(context.Background())
	if _, ok := ctx3.Deadline(); ok {
		t.Error("no timeout, yet a deadline")
	}
	cancel3()
}

func TestUsageAmount(t *testing.T) {
	u := Usage{Iterations: 3, ModelCalls: 2, ToolCalls: 1, ToolRounds: 1, PromptTokens: 700, CompletionTokens: 200, TotalTokens: 900, CostUSD: 0.001, Elapsed: time.Second}
	want := Amount{ModelCalls: 2, ToolCalls: 1, PromptTokens: 700, CompletionTokens: 200, TotalTokens: 900, CostUSD: 0.001}
	if got := u.Amount(); got != want {
		t.Errorf("Amount() = %+v", got)
	}
}

func TestRemaining(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxIterations: 25, MaxModelCalls: 8, MaxTotalTokens: 1000, MaxCostUSD: 1,
		Timeout: plan.Duration(time.Minute), EstimatedOutputTokensPerCall: 100})
	a.Iteration()
	r, _, err := a.ReserveModelCall(200, 0, &plan.Pricing{InputUSDPerMTok: 1000, OutputUSDPerMTok: 1000})
	if err != nil {
		t.Fatal(err)
	}
	got := a.Remaining()
	want := Remaining{Iterations: 24, ModelCalls: 7, ToolCalls: Unlimited, ToolRounds: Unlimited, ReflectionAttempts: Unlimited,
		PlanSteps: Unlimited, PromptTokens: Unlimited, CompletionTokens: Unlimited, TotalTokens: 700, CostUSD: 0.7, Time: time.Minute}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })); diff != "" {
		t.Errorf("Remaining (-want +got):\n%s", diff)
	}
	r.Release()
	if a.Remaining().TotalTokens != 1000 {
		t.Errorf("released tokens not returned: %+v", a.Remaining())
	}
}

func TestExceededMessages(t *testing.T) {
	for _, tt := range []struct {
		e    Exceeded
		want string
	}{
		{Exceeded{Limit: MaxTotalTokens, Max: 100000, Used: 100512}, "budget exceeded: max_total_tokens (limit 100000, used 100512)"},
		{Exceeded{Limit: MaxIterations, Max: 25, Used: 26, Preflight: true}, "budget exceeded: max_iterations (limit 25, would use 26)"},
		{Exceeded{Limit: MaxCostUSD, Max: 0.5, Used: 0.5012}, "budget exceeded: max_cost_usd (limit $0.5, used $0.5012)"},
		{Exceeded{Limit: Timeout, Max: 30, Used: 30.0004}, "budget exceeded: timeout (limit 30s, used 30s)"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// No limit is exceeded by more than what the calls in flight consume
// beyond their reservation, however many goroutines share the accountant;
// with exact estimates, not at all.
func TestConcurrentSharedBudget(t *testing.T) {
	const workers = 8
	for _, tc := range []struct {
		name string
		// provider returns the usage of a call given the prompt estimate,
		// the reserved output and the cap it was sent.
		provider func(prompt, reserved int64, sent int) provider.Usage
	}{
		{"exact estimates", func(p, r int64, _ int) provider.Usage { return usage(p, r, 0) }},
		{"output up to the cap, prompt over the estimate", func(p, _ int64, sent int) provider.Usage { return usage(p+7, int64(sent), 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := plan.Budget{MaxModelCalls: 60, MaxTotalTokens: 20000, MaxToolCalls: 100, MaxCompletionTokens: 5000, EstimatedOutputTokensPerCall: 64}
			a := New(b)
			var mu sync.Mutex
			maxExcess := int64(0) // the most one call used beyond its reservation
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						r, sent, err := a.ReserveModelCall(300, 256, nil)
						if err != nil {
							return
						}
						est := r.Estimate()
						u := tc.provider(est.PromptTokens, est.CompletionTokens, sent)
						mu.Lock()
						maxExcess = max(maxExcess, u.PromptTokens+u.CompletionTokens-est.TotalTokens)
						mu.Unlock()
						if r.Commit(u, true) != nil {
							return
						}
						if a.ToolCall() != nil {
							return
						}
					}
				}()
			}
			wg.Wait()
			u := a.Usage()
			if u.ModelCalls > b.MaxModelCalls || u.ToolCalls > b.MaxToolCalls {
				t.Errorf("counts exceeded: %+v", u)
			}
			if limit := b.MaxTotalTokens + workers*maxExcess; u.TotalTokens > limit {
				t.Errorf("total tokens %d > %d + %d calls in flight × %d", u.TotalTokens, b.MaxTotalTokens, workers, maxExcess)
			}
			if maxExcess == 0 && (u.TotalTokens > b.MaxTotalTokens || u.CompletionTokens > b.MaxCompletionTokens) {
				t.Errorf("exact estimates, yet usage %+v passed a limit", u)
			}
			if !errors.Is(a.Err(), &Exceeded{}) {
				t.Errorf("run ended without a budget error: %v", a.Err())
			}
			if a.Reserved() != (Usage{}) {
				t.Errorf("reservations left: %+v", a.Reserved())
			}
		})
	}
}

// One call at a time, the overshoot is at most that one call's excess over
// its estimate: the next reservation is refused.
func TestSequentialOvershootIsOneCall(t *testing.T) {
	b := plan.Budget{MaxTotalTokens: 10000, EstimatedOutputTokensPerCall: 100}
	a := New(b)
	const excess = 50
	for {
		r, sent, err := a.ReserveModelCall(400, 1000, nil)
		if err != nil {
			break
		}
		est := r.Estimate()
		if r.Commit(usage(est.PromptTokens+excess, min(int64(sent), est.CompletionTokens), 0), true) != nil {
			break
		}
	}
	if u := a.Usage(); u.TotalTokens > b.MaxTotalTokens+excess {
		t.Errorf("total %d passed %d by more than one call's excess %d", u.TotalTokens, b.MaxTotalTokens, excess)
	}
}

func TestCost(t *testing.T) {
	if got := Cost(nil, 1e6, 1e6); got != 0 {
		t.Errorf("nil pricing costs %v", got)
	}
	if got := Cost(&plan.Pricing{InputUSDPerMTok: 0.15, OutputUSDPerMTok: 0.60}, 1_000_000, 500_000); math.Abs(got-0.45) > 1e-12 {
		t.Errorf("Cost = %v, want 0.45", got)
	}
}

func TestPreflightBestOfN(t *testing.T) {
	b := plan.Budget{MaxModelCalls: 4, MaxTotalTokens: 12000}
	e := plan.Estimate{ModelCallsPerCandidate: 1, TotalTokensPerCandidate: 3000}
	if err := PreflightBestOfN(b, e, 4); err != nil {
		t.Errorf("a set that fits exactly: %v", err)
	}
	wantExceeded(t, PreflightBestOfN(b, e, 5), MaxModelCalls, 4, 5, true)

	withJudge := e
	withJudge.ScorerModelCallsPerCandidate = 1
	withJudge.ScorerTotalTokensPerCandidate = 800
	wantExceeded(t, PreflightBestOfN(plan.Budget{MaxModelCalls: 8, MaxTotalTokens: 12000}, withJudge, 4), MaxTotalTokens, 12000, 15200, true)
	if err := PreflightBestOfN(plan.Budget{MaxModelCalls: 8, MaxTotalTokens: 15200}, withJudge, 4); err != nil {
		t.Errorf("with scorer estimates: %v", err)
	}

	err := PreflightBestOfN(plan.Budget{MaxTotalTokens: 1000}, plan.Estimate{ModelCallsPerCandidate: 1}, 2)
	if !errors.Is(err, ErrZeroEstimate) || !strings.Contains(err.Error(), "total_tokens_per_candidate") {
		t.Errorf("zero token estimate: %v", err)
	}
	if err := PreflightBestOfN(plan.Budget{MaxModelCalls: 3}, plan.Estimate{}, 2); !errors.Is(err, ErrZeroEstimate) {
		t.Errorf("zero call estimate: %v", err)
	}
	if err := PreflightBestOfN(plan.Budget{MaxCostUSD: 1}, plan.Estimate{}, 2); !errors.Is(err, ErrZeroEstimate) {
		t.Errorf("zero cost estimate: %v", err)
	}
	wantExceeded(t, PreflightBestOfN(plan.Budget{MaxCostUSD: 1}, plan.Estimate{CostUSDPerCandidate: 0.3}, 4), MaxCostUSD, 1, 1.2, true)
	if err := PreflightBestOfN(plan.Budget{}, plan.Estimate{}, 4); err != nil {
		t.Errorf("no aggregate limits: %v", err)
	}
	if err := PreflightBestOfN(plan.Budget{MaxTotalTokens: math.MaxInt64}, plan.Estimate{TotalTokensPerCandidate: math.MaxInt64, ScorerTotalTokensPerCandidate: 5}, 3); !errors.Is(err, &Exceeded{Limit: MaxTotalTokens}) {
		t.Errorf("overflowing estimate: %v", err)
	}
	for _, bad := range []plan.Estimate{{ModelCallsPerCandidate: -1}, {CostUSDPerCandidate: math.NaN()}, {CostUSDPerCandidate: -1}} {
		if err := PreflightBestOfN(plan.Budget{}, bad, 1); err == nil {
			t.Errorf("estimate %+v accepted", bad)
		}
	}
	if err := PreflightBestOfN(b, e, 0); err == nil {
		t.Error("zero candidates accepted")
	}
}

func BenchmarkReserveCommit(b *testing.B) {
	pricing := &plan.Pricing{InputUSDPerMTok: 0.15, OutputUSDPerMTok: 0.6}
	bud := plan.DefaultBudget()
	bud.MaxTotalTokens = math.MaxInt64
	bud.MaxCostUSD = 1e12
	bud.MaxIterations = 0
	b.Run("serial", func(b *testing.B) {
		a := New(bud)
		b.ReportAllocs()
		for b.Loop() {
			r, _, err := a.ReserveModelCall(1200, 4096, pricing)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Commit(usage(1180, 40, 1220), true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		a := New(bud)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, _, err := a.ReserveModelCall(1200, 4096, pricing)
				if err != nil {
					b.Fatal(err)
				}
				r.Commit(usage(1180, 40, 1220), true)
			}
		})
	})
	b.Run("counter", func(b *testing.B) {
		a := New(plan.Budget{})
		for b.Loop() {
			a.ToolCall()
		}
	})
}

// lockedCounters is the least a concurrency-safe accountant must do per
// call: take a lock and add the call's figures, once to reserve and once
// to commit. BenchmarkReserveCommitRatio measures against it.
type lockedCounters struct {
	mu                             sync.Mutex
	calls, prompt, completion, tot int64
	cost                           float64
}

func (l *lockedCounters) add(p, c int64, cost float64) {
	l.mu.Lock()
	l.calls++
	l.prompt += p
	l.completion += c
	l.tot += p + c
	l.cost += cost
	l.mu.Unlock()
}

// BenchmarkReserveCommitRatio interleaves a reserve+commit pair with the
// bare locked additions and reports the ratio of their medians
// ("x-locked-add"), so load from other processes hits both alike.
func BenchmarkReserveCommitRatio(b *testing.B) {
	pricing := &plan.Pricing{InputUSDPerMTok: 0.15, OutputUSDPerMTok: 0.6}
	a := New(plan.Budget{MaxTotalTokens: math.MaxInt64, MaxCostUSD: 1e12, MaxCompletionTokens: math.MaxInt64, EstimatedOutputTokensPerCall: 512})
	var base lockedCounters
	var acctT, baseT []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, _, err := a.ReserveModelCall(1200, 4096, pricing)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Commit(usage(1180, 40, 1220), true); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		base.add(1200, 512, Cost(pricing, 1200, 512))
		base.add(1180, 40, Cost(pricing, 1180, 40))
		acctT = append(acctT, t1.Sub(t0))
		baseT = append(baseT, time.Since(t1))
	}
	b.ReportMetric(float64(median(acctT)), "p50-ns")
	b.ReportMetric(float64(median(acctT))/float64(median(baseT)), "x-locked-add")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestStreamedStopsPastTheCap streams a call's output past its cap under
// each limit that can set the cap: the call is allowed its cap and half as
// much again plus 64 tokens (the estimate's error), and one token more is
// the named limit's error, sticky.
func TestStreamedStopsPastTheCap(t *testing.T) {
	pricing := &plan.Pricing{InputUSDPerMTok: 1e6, OutputUSDPerMTok: 1e6} // $1 a token
	tests := []struct {
		name      string
		b         plan.Budget
		prompt    int64
		maxOut    int
		pricing   *plan.Pricing
		limit     string
		max       float64
		allowed   int64   // the most tokens streamed without an error
		usedAfter float64 // Exceeded.Used at allowed+1
	}{
		{"the call's max_output_tokens", plan.Budget{}, 10, 100, nil, MaxOutputTokens, 100, 100 + 50 + 64, 215},
		{"max_completion_tokens", plan.Budget{MaxCompletionTokens: 200}, 10, 4096, nil, MaxCompletionTokens, 200, 200 + 100 + 64, 365},
		{"max_total_tokens after the prompt", plan.Budget{MaxTotalTokens: 1000}, 600, 4096, nil, MaxTotalTokens, 1000, 400 + 200 + 64, 600 + 665},
		{"max_cost_usd after the prompt's cost", plan.Budget{MaxCostUSD: 500}, 100, 4096, pricing, MaxCostUSD, 500, 400 + 200 + 64, 100 + 665},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newAt(tt.b)
			r, _, err := a.ReserveModelCall(tt.prompt, tt.maxOut, tt.pricing)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{1, tt.allowed / 2, tt.allowed} {
				if err := r.Streamed(n); err != nil {
					t.Fatalf("Streamed(%d): %v", n, err)
				}
			}
			err = r.Streamed(tt.allowed + 1)
			wantExceeded(t, err, tt.limit, tt.max, tt.usedAfter, true)
			if a.Err() != err {
				t.Errorf("the error is not sticky: Err() = %v", a.Err())
			}
			// A smaller count later does not undo it.
			if err := r.Streamed(1); err == nil {
				t.Error("Streamed below the allowance after the error returned nil")
			}
		})
	}
}

func TestStreamedWithoutACapNeverStops(t *testing.T) {
	a, _ := newAt(plan.Budget{})
	r, send, err := a.ReserveModelCall(10, 0, nil)
	if err != nil || send != 0 {
		t.Fatalf("reserve: send %d, %v", send, err)
	}
	if err := r.Streamed(math.MaxInt64 / 2); err != nil {
		t.Fatal(err)
	}
}

// TestStreamedReturnsTheRunsError: a call streaming while another limit
// ends the run is told to stop as well.
func TestStreamedReturnsTheRunsError(t *testing.T) {
	a, _ := newAt(plan.Budget{MaxToolCalls: 1})
	r, _, err := a.ReserveModelCall(10, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.ReserveToolCalls(2)
	wantExceeded(t, r.Streamed(1), MaxToolCalls, 1, 2, true)
}

// TestStreamedCountsWithoutUsage: a call whose provider reports no usage
// counts what it streamed when that is more than the estimate, and a call
// that failed after streaming counts it too; reported usage replaces both.
func TestStreamedCountsWithoutUsage(t *testing.T) {
	pricing := &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 2}
	a, _ := newAt(plan.Budget{EstimatedOutputTokensPerCall: 50})
	r, _, _ := a.ReserveModelCall(100, 1000, pricing)
	r.Streamed(300)
	if err := r.Commit(provider.Usage{}, false); err != nil {
		t.Fatal(err)
	}
	want := Usage{ModelCalls: 1, PromptTokens: 100, CompletionTokens: 300, TotalTokens: 400, CostUSD: (100*1 + 300*2) / 1e6}
	if diff := cmp.Diff(want, a.Usage(), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Elapsed" }, cmp.Ignore())); diff != "" {
		t.Errorf("commit without usage (-want +got):\n%s", diff)
	}

	// Less than the estimate: the estimate stands.
	b, _ := newAt(plan.Budget{EstimatedOutputTokensPerCall: 50})
	r, _, _ = b.ReserveModelCall(100, 1000, nil)
	r.Streamed(20)
	r.Commit(provider.Usage{}, false)
	if got := b.Usage().CompletionTokens; got != 50 {
		t.Errorf("completion %d, want the estimate 50", got)
	}

	// Reported usage wins.
	c, _ := newAt(plan.Budget{})
	r, _, _ = c.ReserveModelCall(100, 1000, nil)
	r.Streamed(300)
	r.Commit(usage(90, 7, 97), true)
	if got := c.Usage(); got.CompletionTokens != 7 || got.TotalTokens != 97 {
		t.Errorf("usage %+v, want the reported 90+7", got)
	}

	// A failed call that streamed counts it, and can pass a limit.
	d, _ := newAt(plan.Budget{MaxTotalTokens: 300})
	r, _, _ = d.ReserveModelCall(100, 1000, nil)
	if err := r.Streamed(250); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if got := d.Usage(); got.ModelCalls != 1 || got.TotalTokens != 350 || d.Reserved() != (Usage{}) {
		t.Errorf("after a failed streamed call: used %+v, reserved %+v", got, d.Reserved())
	}
	wantExceeded(t, d.Err(), MaxTotalTokens, 300, 350, false)
	if err := r.Streamed(1); !errors.Is(err, errSettled) {
		t.Errorf("Streamed after Release: %v", err)
	}
}
