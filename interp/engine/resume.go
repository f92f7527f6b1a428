package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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
func (e *Engine) Resume(ctx context.Context, runID string) (*Result, error) {
	events, err := journal.ReadFile(journal.Path(e.opts.StateDir, runID))
	if err != nil {
		return nil, err
	}
	return e.resume(ctx, runID, events)
}

// resume is Resume from the journal's events, already read.
func (e *Engine) resume(ctx context.Context, runID string, events []journal.Event) (*Result, error) {
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
		return nil, e.secrets.err(err)
	}
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

// ResumeRun continues run runID found in stateDir: it loads the plan saved
// with the run, builds an engine for it (opts.BaseDir defaults to the
// directory the run was started from) and resumes.
func ResumeRun(ctx context.Context, stateDir, runID string, opts Options) (*Result, error) {
	b, err := journal.LoadPlan(stateDir, runID)
	if err != nil {
		return nil, err
	}
	p, err := plan.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	events, err := journal.ReadFile(journal.Path(stateDir, runID))
	if err != nil {
		return nil, err
	}
	if opts.BaseDir == "" {
		st, err := startOf(events)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", runID, err)
		}
		opts.BaseDir = st.BaseDir
	}
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	opts.StateDir = stateDir
	e, err := New(p, opts)
	if err != nil {
		return nil, err
	}
	res, err := e.resume(ctx, runID, events)
	// Close waits for the journal's final fsync; its error is the caller's
	// to see, as for Run.
	if cerr := e.Close(); cerr != nil && err == nil {
		return res, cerr
	}
	return res, err
}
