package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// ErrRunFinished is returned when asked to resume a run whose journal
// already ends with a terminated event.
var ErrRunFinished = errors.New("run already finished")

// ErrNotResumable is returned for a run whose journal cannot be continued.
var ErrNotResumable = errors.New("run cannot be resumed")

// Resume continues an interrupted run of this engine's plan from its last
// complete iteration: the conversation is rebuilt from the journal (the
// assistant message of each reasoning_complete and the messages of each
// observations_collected), the budget is charged with everything the
// journal says was spent (a model call in flight included: see
// chargeInFlight), and the run appends to the same journal. An iteration cut
// short after it acted is completed from the journal without asking the
// model again (completeCut): a tool call dispatched without a result runs
// again only when its tool's on_resume says so, and the model is told the
// outcome is unknown otherwise. An iteration cut short before it acted is
// done again from its model call.
//
// The run's lock is taken first (a run another process holds is refused,
// wrapping journal.ErrLocked), then every line of the journal is verified
// and the plan compared with the digest the run started with; any failure
// is ErrNotResumable wrapping the reason.
func (e *Engine) Resume(ctx context.Context, runID string) (*Result, error) {
	lock, err := journal.Lock(e.opts.StateDir, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w: %w", runID, ErrNotResumable, err)
	}
	res, err := e.resumeLocked(ctx, lock, func(events []journal.Event) error {
		b, err := e.planJSON()
		if err != nil {
			return err
		}
		return journal.CheckPlan(events, b, "the engine's plan")
	})
	if err != nil {
		lock.Unlock()
	}
	return res, err
}

// resumeLocked reads and verifies the journal of the run lock holds, has
// checkPlan compare the plan with it, and resumes. On success the run's
// journal holds the lock from then on and releases it when it closes.
func (e *Engine) resumeLocked(ctx context.Context, lock *journal.RunLock, checkPlan func([]journal.Event) error) (*Result, error) {
	runID := lock.RunID()
	events, err := journal.ReadRun(lock.StateDir(), runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w: %w", runID, ErrNotResumable, err)
	}
	if err := checkPlan(events); err != nil {
		return nil, fmt.Errorf("run %s: %w: %w", runID, ErrNotResumable, err)
	}
	return e.resume(ctx, lock, events)
}

// resume is Resume from the journal's events, already read and verified
// under the run's lock.
func (e *Engine) resume(ctx context.Context, lock *journal.RunLock, events []journal.Event) (*Result, error) {
	runID := lock.RunID()
	st, err := startOf(events)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	if st.BestOfN != "" {
		// Candidates persist nothing, so there is no history to resume from.
		return nil, fmt.Errorf("run %s: %w: %s is a best-of-N run; run it again", runID, ErrNotResumable, st.BestOfN)
	}
	for _, ev := range events {
		if ev.Type == journal.Terminated {
			var t journal.TerminatedData
			_ = ev.Decode(&t)
			return nil, fmt.Errorf("run %s: %w (%s)", runID, ErrRunFinished, t.Reason)
		}
	}
	// The budget covers the whole run, so the resumed part starts with
	// everything the journal says was spent, including the model calls of
	// an iteration cut short (they were paid for): a reply whose line was
	// still held, and a call still streaming, left their model_call_started
	// line, and are charged by its estimate.
	spent := spentBy(events)
	ro := RunOptions{RunID: runID, Mode: st.Mode, Depth: st.Depth, Ancestors: st.Ancestors}
	r, err := e.newRun(ctx, st.Agent, st.Input, ro)
	if err != nil {
		return nil, e.secrets.Err(err)
	}
	r.lock = lock
	r.profile = st.Profile
	r.conv = r.initialConversation()
	react := r.mode == "simple" || r.mode == "react" || r.mode == ""
	if react {
		r.replay(events)
	}
	r.interrupted = findInterrupted(runID, events, r.iter, react)
	r.delegations = r.interrupted.delegations
	chargeInFlight(&spent, events)
	spent.Iterations = int64(r.iter)
	if c := r.interrupted.cut; c != nil {
		spent.Iterations = int64(c.iteration) // counted when it began
	}
	r.acct = budget.New(e.plan.Budget(r.agent.Budget), budget.WithUsed(spent), budget.WithClock(e.opts.Now))
	if err := r.open(true); err != nil {
		return nil, err
	}
	r.recordStarted(events[len(events)-1].Seq)
	if r.interrupted.cut != nil {
		r.resumeCut()
	}
	return r.execute(ctx), nil
}

// startOf finds the run's first started event.
func startOf(events []journal.Event) (startedData, error) {
	for _, ev := range events {
		if ev.Type == journal.Started {
			var st startedData
			if err := ev.Decode(&st); err != nil {
				return st, err
			}
			return st, nil
		}
	}
	return startedData{}, errors.New("journal has no started event")
}

// replay rebuilds the conversation up to the last complete iteration.
func (r *run) replay(events []journal.Event) {
	pending := map[int]provider.Message{}
	for _, ev := range events {
		switch ev.Type {
		case journal.ReasoningComplete:
			var d reasoningData
			if ev.Decode(&d) == nil {
				pending[ev.Iteration] = d.Message
			}
		case journal.ObservationsCollected:
			msg, ok := pending[ev.Iteration]
			if !ok {
				continue
			}
			var d observationsData
			if ev.Decode(&d) != nil {
				continue
			}
			r.conv = append(r.conv, msg)
			r.conv = append(r.conv, d.Messages...)
			r.iter = ev.Iteration
			delete(pending, ev.Iteration)
		}
	}
}

// spentBy adds up what a journal says a run consumed: model calls and
// their usage, tool calls and rounds, and the time between its first and
// last event.
func spentBy(events []journal.Event) budget.Usage {
	var u budget.Usage
	for _, ev := range events {
		switch ev.Type {
		case journal.ReasoningComplete:
			var d journal.ReasoningCompleteData
			if ev.Decode(&d) != nil {
				continue
			}
			u.ModelCalls++
			u.PromptTokens += d.Usage.PromptTokens
			u.CompletionTokens += d.Usage.CompletionTokens
			u.TotalTokens += max(d.Usage.TotalTokens, d.Usage.PromptTokens+d.Usage.CompletionTokens)
			u.CostUSD += d.CostUSD
		case journal.ToolsDispatched:
			var d journal.ToolsDispatchedData
			if ev.Decode(&d) != nil {
				continue
			}
			u.ToolRounds++
			u.ToolCalls += int64(len(d.Calls))
		}
	}
	if len(events) > 1 {
		u.Elapsed = events[len(events)-1].Time.Sub(events[0].Time)
	}
	return u
}

// ResumeRun continues run runID found in stateDir: it takes the run's lock
// (a run that another process is running or resuming is refused, wrapping
// journal.ErrLocked), then does what ResumeLocked does.
func ResumeRun(ctx context.Context, stateDir, runID string, opts Options) (*Result, error) {
	lock, err := journal.Lock(stateDir, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w: %w", runID, ErrNotResumable, err)
	}
	defer lock.Unlock() // once the journal holds it, its Close releases it first
	return ResumeLocked(ctx, lock, opts)
}

// ResumeLocked continues the run whose lock the caller holds (taken with
// journal.Lock, so the caller can tidy up after the interrupted attempt
// first): it verifies every line of the journal, loads the plan saved with
// the run and checks it against the digest the run started with, builds an
// engine for it and resumes. Everything it uses comes from the verified
// journal, the checked plan or the caller: opts.BaseDir defaults to the
// directory recorded in the run's started line, and opts.StateDir is the
// lock's. A journal or plan that does not verify is ErrNotResumable
// wrapping journal.ErrTampered, journal.ErrUnsigned or
// journal.ErrPlanChanged. The caller releases the lock when ResumeLocked
// returns (the run's journal releases it earlier, when it closes).
func ResumeLocked(ctx context.Context, lock *journal.RunLock, opts Options) (*Result, error) {
	e, events, err := engineForResume(lock, opts)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w: %w", lock.RunID(), ErrNotResumable, err)
	}
	res, err := e.resume(ctx, lock, events)
	// Close waits for the journal's final fsync: its error is the caller's
	// to see, as for Run.
	if cerr := e.Close(); cerr != nil && err == nil {
		return res, cerr
	}
	return res, err
}

// engineForResume reads and verifies the locked run's journal and builds
// an engine for the plan saved with it, once checked.
func engineForResume(lock *journal.RunLock, opts Options) (*Engine, []journal.Event, error) {
	stateDir, runID := lock.StateDir(), lock.RunID()
	events, err := journal.ReadRun(stateDir, runID)
	if err != nil {
		return nil, nil, err
	}
	b, err := journal.VerifiedPlan(stateDir, runID, events)
	if err != nil {
		return nil, nil, err
	}
	p, err := plan.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	if opts.BaseDir == "" {
		st, err := startOf(events)
		if err != nil {
			return nil, nil, err
		}
		opts.BaseDir = st.BaseDir
	}
	// Absolute, because the toolbox puts a relative state directory under
	// the base directory, which is now the run's, not the caller's.
	opts.StateDir = absDir(stateDir)
	e, err := New(p, opts)
	if err != nil {
		return nil, nil, err
	}
	e.usePlanJSON(b)
	return e, events, nil
}
