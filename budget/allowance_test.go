package budget

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// An allowance that crosses a process boundary as JSON (a best-of-N
// candidate's child workflow) gives the accountant Stage gives: the same
// limits, and a limit with nothing left still allows nothing and reports
// its floor as unused.
func TestAllowanceCrossesAsJSON(t *testing.T) {
	agg := New(plan.Budget{MaxIterations: 2, MaxToolCalls: 1, MaxTotalTokens: 100})
	r1, err := agg.ReserveStage(Usage{Iterations: 1, ToolCalls: 1, TotalTokens: 40})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := agg.ReserveStage(Usage{Iterations: 1, TotalTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r2.Allowance(plan.Budget{MaxTotalTokens: 500}))
	if err != nil {
		t.Fatal(err)
	}
	var al Allowance
	if err := json.Unmarshal(b, &al); err != nil {
		t.Fatal(err)
	}
	far, near := al.Accountant(), r2.Stage(plan.Budget{MaxTotalTokens: 500})
	if far.Budget() != near.Budget() || far.Budget().MaxTotalTokens != 60 || far.Budget().MaxIterations != 1 {
		t.Fatalf("limits across JSON %+v, here %+v", far.Budget(), near.Budget())
	}
	if err := far.Iteration(); err != nil {
		t.Fatal(err)
	}
	// r1 holds the one tool call: the allowance allows none.
	wantExceeded(t, far.ToolCall(), MaxToolCalls, 0, 1, true)
	if u := far.Usage(); u != (Usage{Iterations: 1, Elapsed: u.Elapsed}) {
		t.Errorf("usage %+v reports the floor", u)
	}
	if err := r2.Settle(far.Usage()); err != nil {
		t.Fatalf("a stage that kept to its allowance passed the aggregate: %v", err)
	}
	r1.Release()
}

// A share (a delegation run elsewhere) may use what its holder has left,
// no more; its errors read as the holder's would; its Usage is its own, and
// settling it leaves the holder as a shared accountant would be left.
func TestShareCountsAsTheHolder(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	b := plan.Budget{MaxIterations: 5, MaxModelCalls: 3, MaxTotalTokens: 100, Timeout: plan.Duration(time.Minute)}
	holder, shared := New(b, WithClock(now)), New(b, WithClock(now))
	for _, a := range []*Accountant{holder, shared} {
		if err := a.Iteration(); err != nil {
			t.Fatal(err)
		}
		r, _, err := a.ReserveModelCall(10, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(provider.Usage{PromptTokens: 10, CompletionTokens: 20, TotalTokens: 30}, true); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(10 * time.Second)
	res, err := holder.ReserveStage(Usage{})
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(res.Share())
	if err != nil {
		t.Fatal(err)
	}
	var al Allowance
	if err := json.Unmarshal(wire, &al); err != nil {
		t.Fatal(err)
	}
	far := al.Accountant(WithClock(now))
	if far.Budget() != b {
		t.Fatalf("a share's limits %+v, want the holder's %+v", far.Budget(), b)
	}
	if got := far.Remaining(); got != shared.Remaining() {
		t.Errorf("a share has %+v left, the holder %+v", got, shared.Remaining())
	}
	// The same work on the share and on the shared accountant: two calls
	// fit, the third is refused by the holder's limit, in its terms.
	for _, a := range []*Accountant{far, shared} {
		for range 2 {
			if err := a.Iteration(); err != nil {
				t.Fatal(err)
			}
			r, _, err := a.ReserveModelCall(5, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Commit(provider.Usage{PromptTokens: 5, CompletionTokens: 5, TotalTokens: 10}, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _, farErr := far.ReserveModelCall(5, 0, nil)
	_, _, sharedErr := shared.ReserveModelCall(5, 0, nil)
	wantExceeded(t, farErr, MaxModelCalls, 3, 4, true)
	if farErr.Error() != sharedErr.Error() {
		t.Errorf("share: %v\nshared: %v", farErr, sharedErr)
	}
	if u := far.Usage(); u != (Usage{Iterations: 2, ModelCalls: 2, PromptTokens: 10, CompletionTokens: 10, TotalTokens: 20, Elapsed: u.Elapsed}) || u.Elapsed != 0 {
		t.Errorf("a share's usage %+v is not its own", u)
	}
	var ex *Exceeded
	if !errors.As(farErr, &ex) {
		t.Fatal(farErr)
	}
	if err := res.SettleShare(far.Usage(), ex); err == nil || err.Error() != sharedErr.Error() {
		t.Errorf("settled: %v, want %v", err, sharedErr)
	}
	hu, su := holder.Usage(), shared.Usage()
	if hu != su || holder.Err().Error() != shared.Err().Error() {
		t.Errorf("holder %+v %v\nshared %+v %v", hu, holder.Err(), su, shared.Err())
	}
}

// A share's timeout is what its holder has left of its own.
func TestShareTimesOutWithTheHolder(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	holder := New(plan.Budget{Timeout: plan.Duration(time.Minute)}, WithClock(now))
	clock = clock.Add(50 * time.Second)
	res, err := holder.ReserveStage(Usage{})
	if err != nil {
		t.Fatal(err)
	}
	far := res.Share().Accountant(WithClock(now))
	if left := far.Remaining().Time; left != 10*time.Second {
		t.Errorf("a share has %s left, want 10s", left)
	}
	clock = clock.Add(10 * time.Second)
	wantExceeded(t, far.Iteration(), Timeout, 60, 60, false)
	res.Release()
}
