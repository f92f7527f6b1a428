package bestofn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
)

// Generation is how one candidate's generation ended.
type Generation struct {
	Content     string
	Usage       budget.Amount
	Termination string
	Iterations  int
	// Status is empty when the candidate produced an answer, else the
	// status it ends with (generation_failed, side_effect_blocked, ...).
	Status Status
	Err    error
	// Stop, when set, stops the whole best-of-N run: the shared budget is
	// exhausted (per Wuwe, one exhausted aggregate limit ends every
	// candidate), or the gate denied the block's command scorer.
	Stop error
}

// Score is the scorer's verdict on one candidate.
type Score struct {
	Score     float64
	Accepted  bool
	Rationale string
	Usage     budget.Amount
	Err       error
	Stop      error // as in Generation
}

// Runner runs the candidates of one best_of_n block. It knows nothing of
// the engine: varying the run options (of type O), generation, scoring, the
// vote key and the journal are functions, so its scheduling and status
// rules are tested on their own.
type Runner[O any] struct {
	Config   plan.BestOfN
	Now      func() time.Time
	Vary     func(index int) (O, map[string]any, error)
	Generate func(ctx context.Context, index int, ro O) Generation
	Score    func(ctx context.Context, c *Candidate) Score
	Key      func(c *Candidate) (string, error)
	Record   func(typ string, data any)
	// Choose is a command selector (Selector.Kind "command"): given every
	// candidate, it returns the eligible one it chose. It runs under
	// parent, after every candidate's events are recorded, and may record
	// its own (the gate's decision, the call) through the journal directly.
	Choose func(ctx context.Context, cs []Candidate) (Choice, error)
	// Runtime, when set, is a durable runtime's concurrency (package
	// engine's Runtime): the candidates run as its coroutines, the deadline
	// and the stop are its, and events are recorded as they happen, since
	// its coroutines take turns and a writer goroutine would record them
	// in an order no replay could repeat. Nil runs goroutines.
	Runtime *Runtime
}

// Runtime is what a durable runtime puts in place of goroutines and
// context cancellation (see Runner.Runtime).
type Runtime struct {
	// Go runs fns at once, at most limit at a time (all when limit <= 0),
	// and returns when every one has returned.
	Go func(ctx context.Context, limit int, fns []func(context.Context))
	// WithTimeout is context.WithTimeoutCause on the runtime's clock.
	WithTimeout func(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
	// WithCancel is context.WithCancelCause whose cancellation also ends
	// the runtime's calls in flight under it.
	WithCancel func(ctx context.Context) (context.Context, context.CancelCauseFunc)
}

// errDeadline is the cause of the context of a run whose timeout passed.
var errDeadline = errors.New("best-of-N timeout")

// Outcome is what Run returns: every candidate in index order, the
// selected one's position (-1 for none), and the error that ended the run
// early (a budget stop or the caller's cancellation), if any.
type Outcome struct {
	Candidates []Candidate
	Selected   int
	Stop       error
	TimedOut   bool
	// SelectErr is why a command selector chose none: its call was denied,
	// failed, or printed no valid choice.
	SelectErr error
}

// Run generates and scores the candidates, max_concurrency at a time, in
// index order of starting, under the block's timeout; then selects.
//
// Ending early: a budget stop cancels every candidate still running (they
// become budget_exceeded) and starts no more (skipped), and nothing is
// selected. The caller's cancellation does the same with cancelled. The
// timeout stops the running candidates (timed_out) and starts no more
// (skipped), but the candidates already scored are still selected from: the
// deadline bounds the work, and what finished in time is a valid pool.
func (b *Runner[O]) Run(parent context.Context) Outcome {
	n := max(b.Config.Candidates, 0)
	cs := make([]Candidate, n)
	for i := range cs {
		cs[i] = Candidate{Index: i, Status: Skipped}
	}
	withTimeout, withCancel := context.WithTimeoutCause, context.WithCancelCause
	if rt := b.Runtime; rt != nil {
		withTimeout, withCancel = rt.WithTimeout, rt.WithCancel
	}
	ctx := parent
	var cancelTimeout context.CancelFunc = func() {}
	if d := b.Config.Timeout.Std(); d > 0 {
		ctx, cancelTimeout = withTimeout(parent, d, errDeadline)
	}
	defer cancelTimeout()
	ctx, stopAll := withCancel(ctx)
	defer stopAll(nil)

	var (
		mu      sync.Mutex // guards stop and the journal calls
		stop    error
		stopped Status // what a candidate the stop interrupted ends as
		wg      sync.WaitGroup
		started = make([]bool, n)
	)
	setStop := func(err error, st Status) {
		mu.Lock()
		defer mu.Unlock()
		if stop == nil {
			stop, stopped = err, st
			stopAll(err)
		}
	}
	// One writer journals the candidates' events in the order they were
	// queued, so a candidate never waits on the journal's file writes to
	// start its model call or to free its slot for the next candidate.
	type event struct {
		typ  string
		data any
	}
	var (
		queueMu sync.Mutex
		record  func(typ string, data any)
		flush   = func() {}
	)
	if b.Runtime != nil {
		record = func(typ string, data any) {
			queueMu.Lock()
			defer queueMu.Unlock()
			b.Record(typ, data)
		}
	} else {
		events := make(chan event, 4*n+4)
		written := make(chan struct{})
		go func() {
			defer close(written)
			for ev := range events {
				b.Record(ev.typ, ev.data)
			}
		}()
		record = func(typ string, data any) {
			queueMu.Lock()
			defer queueMu.Unlock()
			events <- event{typ, data}
		}
		flush = sync.OnceFunc(func() {
			close(events)
			<-written
		})
	}
	// interrupted is the status of a candidate whose context ended early.
	interrupted := func() Status {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stop != nil:
			return stopped
		case parent.Err() != nil:
			return Cancelled
		}
		return TimedOut
	}

	// max_concurrency workers take candidates in index order; a worker that
	// finishes one goes straight on to the next, so no slot waits for a
	// dispatcher to wake up.
	var next atomic.Int64
	worker := func(ctx context.Context) {
		for ctx.Err() == nil {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			started[i] = true
			b.runCandidate(ctx, &cs[i], record, setStop, interrupted)
		}
	}
	workers := min(max(b.Config.MaxConcurrency, 1), n)
	if rt := b.Runtime; rt != nil {
		fns := make([]func(context.Context), workers)
		for i := range fns {
			fns[i] = worker
		}
		rt.Go(ctx, 0, fns)
	} else {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker(ctx)
			}()
		}
		wg.Wait()
	}
	defer flush()

	out := Outcome{Candidates: cs, Selected: -1}
	mu.Lock()
	out.Stop = stop
	mu.Unlock()
	if out.Stop == nil && parent.Err() != nil {
		out.Stop = parent.Err()
	}
	out.TimedOut = errors.Is(context.Cause(ctx), errDeadline)
	for i := range cs {
		if !started[i] {
			record(journal.CandidateFinished, journal.CandidateFinishedData{Index: i, Status: string(Skipped)})
		}
	}
	if out.Stop != nil {
		return out
	}
	sel, err := Select(b.Config.Selector.Kind, cs, b.Config.TieTolerance)
	data := journal.CandidateSelectedData{Index: sel, Selector: b.Config.Selector.Kind}
	if err == nil && b.Config.Selector.Kind == "command" {
		// The candidates' lines reach the journal before the selector's
		// own; the selector runs under the caller's context, not the
		// block's deadline, which bounds the candidates.
		flush()
		record = b.Record
		if b.Choose == nil {
			err = errors.New("best-of-N: a command selector with nothing to run it")
		} else {
			var ch Choice
			ch, err = b.Choose(parent, cs)
			switch {
			case err != nil:
			case ch.Index < 0 || ch.Index >= len(cs) || cs[ch.Index].Status != Eligible:
				err = fmt.Errorf("%w: candidate %d is not eligible", ErrBadChoice, ch.Index)
			default:
				sel, data.Reason = ch.Index, ch.Reason
			}
		}
		if err != nil {
			sel, out.SelectErr = -1, err
		}
		data.Index = sel
	}
	if err != nil {
		data.Reason = err.Error()
	} else {
		out.Selected = sel
		data.Score = cs[sel].Score
		if b.Config.Selector.Kind == "majority_vote" {
			data.Key = cs[sel].Key
			for _, c := range cs {
				if c.Status == Eligible && c.Key == cs[sel].Key {
					data.Votes++
				}
			}
		}
	}
	record(journal.CandidateSelected, data)
	return out
}

// runCandidate generates one candidate, scores it and computes its vote
// key, leaving its final status in c.
func (b *Runner[O]) runCandidate(ctx context.Context, c *Candidate, record func(string, any), setStop func(error, Status), interrupted func() Status) {
	start := b.Now()
	defer func() {
		c.Elapsed = b.Now().Sub(start)
		fin := journal.CandidateFinishedData{Index: c.Index, Status: string(c.Status), Content: c.Content, Usage: c.AccountedUsage(), DurationMS: c.Elapsed.Milliseconds()}
		if c.Error != nil {
			fin.Error = c.Error.Error()
		}
		record(journal.CandidateFinished, fin)
	}()
	ro, vary, err := b.Vary(c.Index)
	record(journal.CandidateStarted, journal.CandidateStartedData{Index: c.Index, Vary: vary})
	if err != nil {
		c.Status, c.Error = GenerationFailed, err
		return
	}

	g := b.Generate(ctx, c.Index, ro)
	c.Content, c.Usage, c.Termination, c.Iterations = g.Content, g.Usage, g.Termination, g.Iterations
	if g.Stop != nil {
		setStop(g.Stop, BudgetExceeded)
		c.Status, c.Error = BudgetExceeded, g.Stop
		return
	}
	if ctx.Err() != nil {
		c.Status, c.Error = interrupted(), context.Cause(ctx)
		return
	}
	if g.Status != "" {
		c.Status, c.Error = g.Status, g.Err
		return
	}

	s := b.Score(ctx, c)
	c.ScorerUsage = s.Usage
	scored := journal.CandidateScoredData{Index: c.Index, Score: s.Score, Accepted: s.Accepted, Rationale: s.Rationale, Usage: s.Usage}
	if s.Err != nil {
		scored.Error = s.Err.Error()
	}
	switch {
	case s.Stop != nil:
		// A scorer stops the block when the budget runs out, or when the
		// gate denies its command: then the others were cancelled.
		if isBudget(s.Stop) {
			setStop(s.Stop, BudgetExceeded)
			c.Status, c.Error = BudgetExceeded, s.Stop
		} else {
			setStop(s.Stop, Cancelled)
			c.Status, c.Error = ScoringFailed, s.Stop
		}
		return
	case ctx.Err() != nil:
		c.Status, c.Error = interrupted(), context.Cause(ctx)
		return
	}
	record(journal.CandidateScored, scored)
	if s.Err != nil {
		c.Status, c.Error = ScoringFailed, s.Err
		return
	}
	c.Score, c.Scored, c.Rationale = s.Score, true, s.Rationale
	if b.Config.Selector.Kind == "majority_vote" {
		k, err := b.Key(c)
		if err != nil {
			c.Status, c.Error = ScoringFailed, fmt.Errorf("selector key: %w", err)
			return
		}
		c.Key = k
	}
	switch {
	case !s.Accepted:
		c.Status, c.Error = Rejected, fmt.Errorf("the scorer did not accept the candidate")
	case s.Score < b.Config.MinimumScore:
		c.Status, c.Error = Rejected, fmt.Errorf("score %g is below minimum_score %g", s.Score, b.Config.MinimumScore)
	default:
		c.Status = Eligible
	}
}

// isBudget reports whether a stop is the shared budget's: a limit reached or
// usage that cannot be counted. Anything else that stops the block (a
// command scorer the gate denied, the journal failing) is not.
func isBudget(err error) bool {
	var ex *budget.Exceeded
	return errors.As(err, &ex) || errors.Is(err, budget.ErrInvalidUsage) || errors.Is(err, budget.ErrUnpriced)
}
