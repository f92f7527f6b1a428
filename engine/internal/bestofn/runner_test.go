package bestofn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
)

// options stands for the engine's run options, which the runner only
// passes from Vary to Generate.
type options struct{ Temperature *float64 }

// fakeBon builds a Runner whose generation and scoring are functions of
// the candidate index, and records journal events in order.
type fakeBon struct {
	mu      sync.Mutex
	events  []string
	active  int
	maxSeen int
}

func (f *fakeBon) runner(cfg plan.BestOfN, gen func(ctx context.Context, i int) Generation, score func(c *Candidate) Score) *Runner[options] {
	return &Runner[options]{
		Config: cfg,
		Now:    time.Now,
		Vary: func(i int) (options, map[string]any, error) {
			t := 0.1 * float64(i)
			return options{Temperature: &t}, map[string]any{"temperature": t}, nil
		},
		Generate: func(ctx context.Context, i int, ro options) Generation {
			f.mu.Lock()
			f.active++
			f.maxSeen = max(f.maxSeen, f.active)
			f.mu.Unlock()
			defer func() {
				f.mu.Lock()
				f.active--
				f.mu.Unlock()
			}()
			return gen(ctx, i)
		},
		Score: func(ctx context.Context, c *Candidate) Score { return score(c) },
		Key:   func(c *Candidate) (string, error) { return strings.ToLower(strings.TrimSpace(c.Content)), nil },
		Record: func(typ string, data any) {
			f.mu.Lock()
			defer f.mu.Unlock()
			switch d := data.(type) {
			case journal.CandidateFinishedData:
				f.events = append(f.events, fmt.Sprintf("%s %d %s", typ, d.Index, d.Status))
			case journal.CandidateSelectedData:
				f.events = append(f.events, fmt.Sprintf("%s %d", typ, d.Index))
			}
		},
	}
}

func answers(contents ...string) func(ctx context.Context, i int) Generation {
	return func(ctx context.Context, i int) Generation {
		return Generation{Content: contents[i], Usage: budget.Amount{ModelCalls: 1, TotalTokens: int64(10 + i)}, Termination: "completed"}
	}
}

func scoreAll(v float64) func(c *Candidate) Score {
	return func(c *Candidate) Score { return Score{Score: v, Accepted: true} }
}

func statuses(cs []Candidate) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%d:%s", c.Index, c.Status))
	}
	return strings.Join(parts, " ")
}

func TestRunnerMajorityVoteStableOrder(t *testing.T) {
	// Candidates finish in reverse index order; the result is still in index
	// order and the vote is the same.
	const n = 5
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	contents := []string{"42", " 41", "42 ", "43", "42"}
	gen := func(ctx context.Context, i int) Generation {
		if i < n-1 {
			select {
			case <-done[i+1]:
			case <-ctx.Done():
			}
		}
		defer close(done[i])
		return answers(contents...)(ctx, i)
	}
	f := &fakeBon{}
	r := f.runner(plan.BestOfN{Candidates: n, MaxConcurrency: n, Selector: plan.Selector{Kind: "majority_vote"}}, gen, scoreAll(0.9))
	out := r.Run(context.Background())
	if out.Stop != nil || out.Selected != 0 {
		t.Fatalf("selected %d (stop %v), want 0", out.Selected, out.Stop)
	}
	for i, c := range out.Candidates {
		if c.Index != i || c.Status != Eligible || c.Content != contents[i] {
			t.Errorf("candidate %d = %+v", i, c)
		}
	}
	if out.Candidates[1].Key != "41" {
		t.Errorf("key of candidate 1 = %q, want the normalised content", out.Candidates[1].Key)
	}
	last := f.events[len(f.events)-1]
	if last != "candidate_selected 0" {
		t.Errorf("last event %q", last)
	}
}

func TestRunnerConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	f := &fakeBon{}
	gen := func(ctx context.Context, i int) Generation {
		f.mu.Lock()
		full := f.active == 3
		f.mu.Unlock()
		if full {
			once.Do(func() { close(release) })
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return answers("a", "b", "c", "d", "e", "f", "g", "h")(ctx, i)
	}
	r := f.runner(plan.BestOfN{Candidates: 8, MaxConcurrency: 3, Selector: plan.Selector{Kind: "highest_score"}}, gen, scoreAll(1))
	out := r.Run(context.Background())
	if f.maxSeen != 3 {
		t.Errorf("at most %d candidates ran at once, want 3", f.maxSeen)
	}
	// All scores tie: fewest tokens wins, which is the lowest index here.
	if out.Selected != 0 {
		t.Errorf("selected %d, want 0", out.Selected)
	}
}

func TestRunnerScoringOutcomes(t *testing.T) {
	gen := func(ctx context.Context, i int) Generation {
		switch i {
		case 4:
			return Generation{Status: GenerationFailed, Err: errors.New("model failed"), Termination: "error"}
		case 5:
			return Generation{Status: SideEffectBlocked, Err: errors.New("proposed a tool call"), Content: "x"}
		}
		return answers("good", "weak", "unsafe", "broken", "", "")(ctx, i)
	}
	score := func(c *Candidate) Score {
		switch c.Content {
		case "good":
			return Score{Score: 0.9, Accepted: true, Usage: budget.Amount{ModelCalls: 1}}
		case "weak":
			return Score{Score: 0.3, Accepted: true}
		case "unsafe":
			return Score{Score: 1, Accepted: false, Rationale: "leaks a secret"}
		}
		return Score{Err: errors.New("judge answered nonsense")}
	}
	f := &fakeBon{}
	r := f.runner(plan.BestOfN{Candidates: 6, MaxConcurrency: 2, MinimumScore: 0.5, Selector: plan.Selector{Kind: "highest_score"}}, gen, score)
	out := r.Run(context.Background())
	want := "0:eligible 1:rejected 2:rejected 3:scoring_failed 4:generation_failed 5:side_effect_blocked"
	if got := statuses(out.Candidates); got != want {
		t.Fatalf("statuses %s\nwant     %s", got, want)
	}
	if out.Selected != 0 || out.Candidates[0].ScorerUsage.ModelCalls != 1 {
		t.Errorf("selected %d, candidate 0 = %+v", out.Selected, out.Candidates[0])
	}
}

func TestRunnerBudgetStopsEverything(t *testing.T) {
	exhausted := errors.New("max_total_tokens exceeded")
	started := make(chan struct{})
	gen := func(ctx context.Context, i int) Generation {
		switch i {
		case 0:
			<-started // candidate 1 is running when the budget runs out
			return Generation{Stop: exhausted, Termination: "budget_exceeded"}
		case 1:
			close(started)
			<-ctx.Done()
			return Generation{Status: GenerationFailed, Err: ctx.Err()}
		}
		return answers("a", "b", "c", "d")(ctx, i)
	}
	f := &fakeBon{}
	r := f.runner(plan.BestOfN{Candidates: 4, MaxConcurrency: 2, Selector: plan.Selector{Kind: "highest_score"}}, gen, scoreAll(1))
	out := r.Run(context.Background())
	if !errors.Is(out.Stop, exhausted) {
		t.Fatalf("stop = %v, want the budget error", out.Stop)
	}
	if got, want := statuses(out.Candidates), "0:budget_exceeded 1:budget_exceeded 2:skipped 3:skipped"; got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
	if out.Selected != -1 {
		t.Errorf("selected %d after a budget stop", out.Selected)
	}
	for _, ev := range f.events {
		if strings.HasPrefix(ev, journal.CandidateSelected) {
			t.Errorf("a stopped run journalled a selection: %v", f.events)
		}
	}
}

func TestRunnerTimeoutKeepsFinishedCandidates(t *testing.T) {
	fastDone := make(chan struct{})
	gen := func(ctx context.Context, i int) Generation {
		if i == 0 {
			defer close(fastDone)
			return answers("fast")(ctx, 0)
		}
		<-fastDone
		<-ctx.Done() // only the deadline ends it
		return Generation{Status: GenerationFailed, Err: ctx.Err()}
	}
	f := &fakeBon{}
	// Candidate 0 frees its slot for candidate 2; both 1 and 2 then hold
	// the two slots until the deadline, so 3 never starts.
	r := f.runner(plan.BestOfN{Candidates: 4, MaxConcurrency: 2, Timeout: plan.Duration(100 * time.Millisecond), Selector: plan.Selector{Kind: "highest_score"}}, gen, scoreAll(0.8))
	out := r.Run(context.Background())
	if got, want := statuses(out.Candidates), "0:eligible 1:timed_out 2:timed_out 3:skipped"; got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
	if !out.TimedOut || out.Stop != nil || out.Selected != 0 {
		t.Errorf("timedOut %v stop %v selected %d", out.TimedOut, out.Stop, out.Selected)
	}
}

func TestRunnerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	gen := func(c context.Context, i int) Generation {
		cancel()
		<-c.Done()
		return Generation{Status: GenerationFailed, Err: c.Err()}
	}
	f := &fakeBon{}
	r := f.runner(plan.BestOfN{Candidates: 3, MaxConcurrency: 1, Selector: plan.Selector{Kind: "highest_score"}}, gen, scoreAll(1))
	out := r.Run(ctx)
	if !errors.Is(out.Stop, context.Canceled) {
		t.Fatalf("stop = %v, want context.Canceled", out.Stop)
	}
	if got, want := statuses(out.Candidates), "0:cancelled 1:skipped 2:skipped"; got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
}

func TestRunnerVaryErrorFailsOnlyThatCandidate(t *testing.T) {
	f := &fakeBon{}
	r := f.runner(plan.BestOfN{Candidates: 2, MaxConcurrency: 2, Selector: plan.Selector{Kind: "highest_score"}}, answers("a", "b"), scoreAll(1))
	r.Vary = func(i int) (options, map[string]any, error) {
		if i == 1 {
			return options{}, nil, errors.New("vary: temperature must be a number")
		}
		return options{}, nil, nil
	}
	out := r.Run(context.Background())
	if got, want := statuses(out.Candidates), "0:eligible 1:generation_failed"; got != want {
		t.Fatalf("statuses %s, want %s", got, want)
	}
}

// With a Runtime, the candidates run through its Go (as a durable
// runtime's coroutines), the deadline and the stop are its, and each
// event is recorded when it happens, on the candidate's own goroutine: a
// replay must see them in the order they were made.
func TestRunnerUsesItsRuntime(t *testing.T) {
	var f fakeBon
	var goCalls, cancels, timeouts int
	b := f.runner(plan.BestOfN{Candidates: 3, MaxConcurrency: 2, Timeout: plan.Duration(time.Minute), Selector: plan.Selector{Kind: "highest_score"}},
		answers("a", "b", "c"), scoreAll(1))
	recording := false
	record := b.Record
	b.Record = func(typ string, data any) {
		if !recording {
			t.Errorf("%s recorded outside a candidate's or the run's own turn", typ)
		}
		record(typ, data)
	}
	b.Runtime = &Runtime{
		// One at a time, on this goroutine, as a workflow's coroutines take turns.
		Go: func(ctx context.Context, limit int, fns []func(context.Context)) {
			goCalls++
			recording = true
			for _, fn := range fns {
				fn(ctx)
			}
			// Recorded already, not queued for a writer.
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.events) != 3 {
				t.Errorf("%d events recorded when the candidates returned, want 3", len(f.events))
			}
		},
		WithTimeout: func(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
			timeouts++
			return context.WithTimeoutCause(ctx, d, cause)
		},
		WithCancel: func(ctx context.Context) (context.Context, context.CancelCauseFunc) {
			cancels++
			return context.WithCancelCause(ctx)
		},
	}
	out := b.Run(context.Background())
	if goCalls != 1 || timeouts != 1 || cancels != 1 {
		t.Errorf("Go %d, WithTimeout %d, WithCancel %d times; want each once", goCalls, timeouts, cancels)
	}
	// The first worker takes every candidate in turn: nothing else runs
	// until it returns.
	want := "candidate_finished 0 eligible,candidate_finished 1 eligible,candidate_finished 2 eligible,candidate_selected 0"
	if got := strings.Join(f.events, ","); got != want || out.Selected != 0 {
		t.Errorf("events %s, selected %d; want %s", got, out.Selected, want)
	}
}
