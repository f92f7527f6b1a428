package repl

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/journal/render"
)

// The engine has no stepping API: it runs a whole loop per Run. :step
// therefore runs the agent for real, in its own goroutine, with an
// observer (engine.Options.OnEvent, which the engine calls synchronously
// after each journal write) that blocks at the end of every phase until the
// person presses Enter. What :step shows is what the engine did, as the
// journal records it: the model's proposed actions (reasoning_complete),
// the gate's decisions (policy_evaluated), the tool results and the
// observations (tool_result, observations_collected).

// isPause reports whether an event ends a phase.
func isPause(typ string) bool {
	switch typ {
	case journal.Started, journal.ReasoningComplete, journal.PolicyEvaluated, journal.ObservationsCollected,
		journal.ReflectionEvaluated, journal.PlanCreated, journal.StepFinished:
		return true
	}
	return false
}

type stepDone struct {
	res    *engine.Result
	err    error
	events []engine.Event // what happened after the last pause
}

// stepper is a run that :step is walking through.
type stepper struct {
	ctx     context.Context // the run's; cancelled by :abort and Close
	cancel  context.CancelFunc
	eng     *engine.Engine
	paused  chan []engine.Event // a phase ended; the run waits for release
	release chan struct{}
	done    chan stepDone
	free    bool // :continue: stop pausing (set before a release)

	pending []engine.Event // owned by the run's goroutine
}

// observe is the engine's OnEvent. It runs on the engine's goroutine, so
// blocking here holds the run between two phases.
func (st *stepper) observe(ev engine.Event) {
	if engine.ShownOnly(ev.Type) {
		return // reasoning_complete carries the whole turn
	}
	st.pending = append(st.pending, ev)
	if st.free || !isPause(ev.Type) {
		return
	}
	evs := st.pending
	st.pending = nil
	select {
	case st.paused <- evs:
	case <-st.ctx.Done():
		return
	}
	select {
	case <-st.release:
	case <-st.ctx.Done():
	}
}

func (s *Session) stepAgent(ctx context.Context, c call) (string, hcl.Diagnostics) {
	if s.step != nil {
		return "", errorAt(c.nameRng, "A run is being stepped", "Enter runs its next phase, :continue runs it to its end, :abort cancels it.")
	}
	name, rng, rest, restOff := c.word()
	if name == "" {
		return "", errorAt(c.nameRng, "Missing agent", ":step needs an agent and its input: :step agent.NAME What is 6 * 7?")
	}
	t, diags := s.runTarget(name, rng, false)
	if diags.HasErrors() {
		return "", diags
	}
	input, diags := s.runInput(c, rest, restOff, rng)
	if diags.HasErrors() {
		return "", diags
	}
	// The run outlives this line: it ends with :continue, :abort, or its
	// last phase, not when the caller's per-line context ends.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st := &stepper{
		ctx:     runCtx,
		cancel:  cancel,
		paused:  make(chan []engine.Event),
		release: make(chan struct{}),
		done:    make(chan stepDone, 1),
	}
	eng, err := s.newEngine(st.observe)
	if err != nil {
		cancel()
		return "", errorAt(rng, "Run did not start", "%v", err)
	}
	st.eng = eng
	// A person reads between phases, so the budget's wall-clock timeout
	// would measure their reading: a stepped run has every limit of its
	// budget but that one.
	b := s.cfg.Plan.Budget(s.cfg.Plan.Agent(t.addr).Budget)
	b.Timeout = 0
	ro := engine.RunOptions{Budget: budget.New(b)}
	go func() {
		res, err := eng.Run(runCtx, t.addr, input, ro)
		st.done <- stepDone{res: res, err: err, events: st.pending}
	}()
	s.step = st
	out, diags := s.waitPhase(ctx, rng)
	if s.step != nil {
		out += "Enter runs the next phase; :continue runs to the end; :abort cancels.\n"
	}
	return out, diags
}

// nextPhase lets the stepped run go on to the end of its next phase.
func (s *Session) nextPhase(ctx context.Context) (string, hcl.Diagnostics) {
	st := s.step
	if err := ctx.Err(); err != nil {
		// Checked first: select picks at random among ready cases.
		return "", nil
	}
	select {
	case st.release <- struct{}{}:
	case <-ctx.Done():
		return "", nil
	}
	return s.waitPhase(ctx, rangeAt("", 0, 0))
}

// waitPhase waits for the stepped run's next pause or its end, and prints
// what happened since the last one.
func (s *Session) waitPhase(ctx context.Context, rng hcl.Range) (string, hcl.Diagnostics) {
	st := s.step
	select {
	case evs := <-st.paused:
		return phaseText(evs), nil
	case d := <-st.done:
		s.step = nil
		st.cancel()
		st.eng.Close()
		if d.err != nil {
			return phaseText(d.events), errorAt(rng, "Run did not start", "%v", d.err)
		}
		return phaseText(d.events) + resultText(d.res), nil
	case <-ctx.Done():
		s.stopStep()
		return "", errorAt(rng, "Interrupted", "The stepped run was cancelled: %v.", ctx.Err())
	}
}

func (s *Session) continueStep(ctx context.Context, c call) (string, hcl.Diagnostics) {
	if s.step == nil {
		return "", errorAt(c.nameRng, "Nothing to continue", ":continue finishes a run started with :step.")
	}
	s.step.free = true
	var b strings.Builder
	for s.step != nil {
		out, diags := s.nextPhase(ctx)
		b.WriteString(out)
		if diags.HasErrors() {
			return b.String(), diags
		}
	}
	return b.String(), nil
}

func (s *Session) abortStep(_ context.Context, c call) (string, hcl.Diagnostics) {
	if s.step == nil {
		return "", errorAt(c.nameRng, "Nothing to abort", ":abort cancels a run started with :step.")
	}
	res := s.stopStep()
	if res == nil {
		return "run cancelled\n", nil
	}
	return resultText(res), nil
}

// stopStep cancels a stepped run and waits for it to end, so no goroutine
// outlives the session. It returns the run's result, if it started.
func (s *Session) stopStep() *engine.Result {
	st := s.step
	if st == nil {
		return nil
	}
	s.step = nil
	st.cancel()
	d := <-st.done
	st.eng.Close()
	return d.res
}

// phaseText prints the events of one phase, one line each, indented by
// delegation depth.
func phaseText(evs []engine.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		jev := journal.Event{Seq: ev.Seq, RunID: ev.RunID, Agent: ev.Agent, Iteration: ev.Iteration, Type: ev.Type, Data: ev.Data}
		indent := strings.Repeat("  ", ev.Depth)
		label := phaseLabel(ev.Type)
		switch ev.Type {
		case journal.ModelCallStarted:
			// The turn's reasoning line follows; :journal shows the write-ahead.
			continue
		case journal.Started:
			fmt.Fprintf(&b, "%srun %s started: %s\n", indent, ev.RunID, render.Describe(jev))
		case journal.PolicyEvaluated:
			var d journal.PolicyEvaluatedData
			if jev.Decode(&d) == nil && len(d.Decisions) > 0 {
				for _, g := range d.Decisions {
					fmt.Fprintf(&b, "%s%-8s %s\n", indent, label, render.Gate(g))
				}
				continue
			}
			fmt.Fprintf(&b, "%s%-8s %s\n", indent, label, render.Describe(jev))
		default:
			fmt.Fprintf(&b, "%s%-8s %s\n", indent, label, render.Describe(jev))
		}
	}
	return b.String()
}

// phaseLabel names an event by the ORGA phase it belongs to.
func phaseLabel(typ string) string {
	switch typ {
	case journal.ModelRouted:
		return "route"
	case journal.ModelCallStarted, journal.ReasoningComplete:
		return "reason"
	case journal.PolicyEvaluated, journal.ApprovalRequested, journal.ApprovalRejected, journal.ApprovalDecided:
		return "gate"
	case journal.ToolsDispatched, journal.ToolResult, journal.RecoveryTriggered, journal.DelegationStarted, journal.DelegationFinished, journal.ToolOutcomeUnknown:
		return "act"
	case journal.ObservationsCollected:
		return "observe"
	case journal.PlanCreated, journal.StepStarted, journal.StepFinished:
		return "plan"
	case journal.ReflectionEvaluated:
		return "reflect"
	case journal.Terminated:
		return "end"
	}
	return typ
}
