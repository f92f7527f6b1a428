package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine/internal/estimate"
	"github.com/symbi-dev/symbi/engine/internal/redact"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// run is one execution of one agent. Its methods are the primitives every
// mode is built from; a run is used by one goroutine at a time except where
// a method says otherwise.
type run struct {
	e       *Engine
	id      string
	agent   *plan.Agent
	name    string // agent name without "agent."
	input   string
	ro      RunOptions
	mode    string
	profile string

	// tokens holds the token estimates of r.conv's messages.
	tokens estimate.Cache
	// requests knows which messages of the last model request were free
	// of secrets (reason redacts every request).
	requests redact.RequestCache
	// proposed is what the last model turn proposed, as reason journalled
	// it; the react step gates these same actions.
	proposed []policy.Action

	acct  *budget.Accountant
	jw    *journal.Writer
	tools *agentTools
	chain *policy.Chain
	// blockMu lets one of a best_of_n block's own tool calls (its
	// command scorer's, its selector's) at a time see tools swapped for
	// its own (callBlockTool).
	blockMu sync.Mutex

	conv   []provider.Message
	iter   int
	answer string
	start  time.Time
	// delegations numbers sub-runs, for their run ids.
	delegations int
	// deltaMu guards held and heldReasoning: streamed text (of the answer,
	// of the reasoning) not shown yet because its end may be the start of
	// a secret.
	deltaMu       sync.Mutex
	held          string
	heldReasoning string
	heldCalls     map[int]string // by tool call, the end of its arguments held back
	// planSaved reports the plan's save, started beside the journal.
	planSaved <-chan error
	// slowRound writes the held lines of a read-only round that runs long
	// (see dispatch); made on the first such round, stopped between them.
	slowRound *time.Timer
	// usageAtStart is the shared accountant's usage when the run began.
	usageAtStart budget.Amount
	// input0 is the policy input without the action, iteration and usage.
	input0 policy.Input
	// progress notices a tool that keeps failing the same way (the agent's
	// progress block); made on the first step that acts.
	progress *ProgressTracker
	// holdAnswer keeps model text off the terminal until the gate has
	// allowed the answer (answerIsDecided).
	holdAnswer bool
	// lock is the run's lock a resume took before reading the journal;
	// the journal's writer holds it from open on.
	lock *journal.RunLock
	// wroteAhead says this iteration dispatched a call that may change the
	// world: its observations are written at once (observe).
	wroteAhead bool
	// callStarted is the data of the model_call_started line being written.
	callStarted journal.ModelCallStartedData
	// interrupted is what a resumed run found of the attempts before it
	// (resumeState); nil for a run that was not resumed.
	interrupted *interrupted
	// paidAnswer: the answer arrived, was allowed and paid for, and its
	// usage passed a limit (answerOverBudget); it is reported with the
	// budget_exceeded termination.
	paidAnswer bool
	// span is the run's invoke_agent span; nil when telemetry is off.
	span trace.Span
	// shadow counts where the shadow policies disagreed with what was
	// enforced, for the Result; approvals counts people's answers.
	shadow    []journal.ShadowTally
	approvals journal.ApprovalTally
	// standing are the rules people said to remember in this run.
	standing []standing
	// approvalMu guards approvals and standing: the asks of one turn may
	// be answered at once (decideAll).
	approvalMu sync.Mutex
}

// DenialError is a final answer (or terminate) that the policies denied.
type DenialError struct {
	Action   policy.Action
	Decision policy.Decision
}

func (e *DenialError) Error() string {
	if e.Decision.Reason == "" {
		return fmt.Sprintf("%s denied", e.Action)
	}
	return fmt.Sprintf("%s denied: %s", e.Action, e.Decision.Reason)
}

// Run executes one agent on input. See the package documentation for how
// the error and the Result's Termination divide the outcomes.
func (e *Engine) Run(ctx context.Context, agent, input string, ro RunOptions) (*Result, error) {
	r, err := e.newRun(ctx, agent, input, ro)
	if err != nil {
		return nil, e.secrets.Err(err)
	}
	r.conv = r.initialConversation()
	if err := r.open(false); err != nil {
		return nil, e.secrets.Err(err)
	}
	r.recordStarted(0)
	return r.execute(ctx), nil
}

// newRun resolves the agent and builds what a run needs, without writing
// anything yet.
func (e *Engine) newRun(ctx context.Context, agent, input string, ro RunOptions) (*run, error) {
	// Before anything is written: the started event holds the input.
	e.registerSecrets()
	addr, err := e.AgentAddress(agent)
	if err != nil {
		return nil, err
	}
	a := e.plan.Agent(addr)
	r := &run{
		e:     e,
		agent: a,
		name:  strings.TrimPrefix(a.Address, "agent."),
		input: input,
		ro:    ro,
		start: e.opts.Now(),
	}
	r.id = ro.RunID
	if r.id == "" {
		r.id = journal.NewRunID(r.start, e.opts.Rand)
	}
	r.mode, r.profile = selectMode(a, input, ro.Mode)
	r.acct = ro.Budget
	if r.acct == nil {
		if e.opts.Runtime != nil {
			// The budget's timeout is measured on the runtime's clock.
			r.acct = budget.New(e.plan.Budget(a.Budget), budget.WithClock(e.opts.Now))
		} else {
			r.acct = budget.New(e.plan.Budget(a.Budget))
		}
	}
	r.usageAtStart = usageOf(r.acct)
	if r.tools, err = e.agentTools(ctx, a); err != nil {
		return nil, err
	}
	if r.chain, err = e.chain(ctx, a, r.tools); err != nil {
		return nil, err
	}
	r.input0 = r.fixedInput()
	r.holdAnswer = answerIsDecided(e.plan, a)
	r.startSpan(ctx)
	return r, nil
}

// answerIsDecided reports whether one of the agent's policies can decide
// its final answer: an OPA or Cedar policy (their rules see every action)
// or a rules policy with a respond pattern. Such an agent's answer is shown
// only after the gate allows it, not streamed as the model writes it: a
// denied answer must never reach the terminal.
func answerIsDecided(p *plan.Plan, a *plan.Agent) bool {
	for _, addr := range a.Policies {
		pol := p.Policy(addr)
		if pol == nil || pol.Mode == plan.PolicyModeShadow {
			continue // a shadow policy never decides what is shown
		}
		if pol.Kind != "rules" || pol.Rules == nil {
			return true
		}
		for _, list := range [][]string{pol.Rules.Deny, pol.Rules.Ask, pol.Rules.Allow} {
			for _, pat := range list {
				if strings.HasPrefix(pat, "respond") {
					return true
				}
			}
		}
	}
	return false
}

// open starts the journal (appending to an existing one when resuming) and
// saves the plan beside it, unless the run persists nothing.
func (r *run) open(resume bool) error {
	if r.ro.NoJournal {
		return nil
	}
	mode, err := journal.ParseSyncMode(r.e.plan.Settings.JournalSync)
	if err != nil {
		return err
	}
	sd := r.e.opts.StateDir
	key, err := r.e.stateKey()
	if err != nil {
		return fmt.Errorf("starting the journal: %w", err)
	}
	opts := []journal.Option{journal.WithClock(r.e.opts.Now), journal.WithKey(key)}
	if resume {
		if r.lock != nil {
			opts = append(opts, journal.WithLock(r.lock))
		}
		r.jw, err = journal.OpenAppend(sd, r.id, mode, opts...)
	} else {
		b, encErr := r.e.planJSON()
		if encErr != nil {
			return fmt.Errorf("saving the plan: %w", encErr)
		}
		r.jw, err = journal.Create(sd, r.id, mode, opts...)
		if err == nil {
			err = r.savePlan(journal.RunDir(sd, r.id), b, mode)
			if err != nil {
				r.jw.Close()
				r.jw = nil
			}
		}
	}
	if err != nil {
		return fmt.Errorf("starting the journal: %w", err)
	}
	return nil
}

// savePlan puts the plan beside the journal before the journal's first
// line, so a run killed at any point after it started can be resumed: the
// file is written and renamed into place here (the kernel has it; a killed
// process loses nothing), and, like the journal's lines, it reaches stable
// storage in the background unless journal_sync is "always". finish waits
// for that sync.
func (r *run) savePlan(dir string, b []byte, mode journal.SyncMode) error {
	tmp, err := os.CreateTemp(dir, journal.PlanFileName+".tmp-*")
	if err != nil {
		return fmt.Errorf("saving the plan: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(dir, journal.PlanFileName)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the plan: %w", err)
	}
	durable := func() error {
		if err := syncPath(path); err != nil {
			return fmt.Errorf("saving the plan: %w", err)
		}
		if err := syncPath(dir); err != nil {
			return fmt.Errorf("saving the plan: %w", err)
		}
		return nil
	}
	if mode == journal.SyncAlways {
		return durable()
	}
	saved := make(chan error, 1)
	r.planSaved = saved
	go func() { saved <- durable() }()
	return nil
}

// syncPath fsyncs a file or a directory.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *run) initialConversation() []provider.Message {
	var msgs []provider.Message
	if r.agent.System != "" {
		msgs = append(msgs, provider.Message{Role: provider.System, Content: r.agent.System})
	}
	return append(msgs, provider.Message{Role: provider.User, Content: r.input})
}

func (r *run) recordStarted(resumeAfter int64) {
	_ = r.record(journal.Started, startedData{
		StartedData: journal.StartedData{
			Agent:         r.agent.Address,
			Mode:          r.mode,
			Input:         r.input,
			SourceHash:    r.e.plan.SourceHash,
			Budget:        budgetInfo(r.acct.Budget()),
			Resume:        resumeAfter,
			JournalFormat: journal.FormatVersion,
			PlanDigest:    r.e.planDigestOf(),
			WithheldTools: r.tools.withheld,
			TraceID:       r.traceID(),
		},
		Profile:   r.profile,
		Depth:     r.ro.Depth,
		Ancestors: r.ro.Ancestors,
		BaseDir:   absDir(r.e.opts.BaseDir),
	})
	r.startDrifts()
}

// execute runs the mode under the budget's deadline and always ends with a
// terminated event.
func (r *run) execute(parent context.Context) *Result {
	parent = r.traced(parent)
	ctx, cancel := r.deadline(parent)
	defer cancel()
	var err error
	if r.iter == 0 {
		err = r.prehydrate(ctx)
	}
	if err == nil && r.interrupted != nil && r.interrupted.cut != nil {
		err = r.completeCut(ctx)
	}
	if err == nil {
		err = r.runMode(ctx)
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil {
		err = r.persistKnowledge(ctx)
	}
	return r.finish(ctx, parent, err)
}

// deadline is the budget's timeout on parent (Accountant.Context), on
// the runtime's clock when there is a runtime.
func (r *run) deadline(parent context.Context) (context.Context, context.CancelFunc) {
	if r.e.opts.Runtime == nil || r.acct.Budget().Timeout <= 0 {
		return r.acct.Context(parent)
	}
	d := r.acct.Budget().Timeout.Std()
	left := r.acct.Remaining().Time
	return r.e.withTimeout(parent, left, &budget.Exceeded{Limit: budget.Timeout, Max: d.Seconds(), Used: d.Seconds()})
}

// runMode is the per-mode dispatch.
func (r *run) runMode(ctx context.Context) error {
	switch r.mode {
	case "simple":
		return r.simple(ctx)
	case "react", "":
		return r.react(ctx)
	case "reflect_and_retry":
		return r.reflectAndRetry(ctx)
	case "plan_execute":
		return r.planExecute(ctx)
	}
	return fmt.Errorf("%w: %q", ErrModeUnavailable, r.mode)
}

// finish classifies how the run ended, journals it and closes the journal.
func (r *run) finish(ctx, parent context.Context, err error) *Result {
	return r.conclude(r.classify(ctx, parent, err), r.ownUsage())
}

// conclude ends a run with termination t: the Result (redacted, as the
// caller prints it), the terminated event, and the journal's close. Every
// way a run ends goes through it, best-of-N included.
func (r *run) conclude(t Termination, usage budget.Amount) *Result {
	res := &Result{
		RunID:       r.id,
		TraceID:     r.traceID(),
		Agent:       r.agent.Address,
		Mode:        r.mode,
		Answer:      r.answer,
		Termination: t,
		Usage:       usage,
		Reserved:    r.acct.Reserved().Amount(),
		Iterations:  r.iter,
		Elapsed:     r.e.opts.Now().Sub(r.start),
		Shadow:      r.shadow,
		Approvals:   r.approvals,
	}
	if t.Reason != Completed && (t.Reason != BudgetExceeded || !r.paidAnswer) {
		res.Answer = ""
	}
	// The caller prints the Result (the summary, --json): it is redacted
	// like every event.
	red := &r.e.secrets
	res.Answer = red.Text(res.Answer)
	res.Termination.Detail = red.Text(t.Detail)
	res.Termination.Err = red.Err(t.Err)
	t = res.Termination
	data := journal.TerminatedData{
		Reason:     string(t.Reason),
		Limit:      t.Limit,
		Iterations: r.iter,
		Usage:      res.Usage,
		DurationMS: res.Elapsed.Milliseconds(),
		Answer:     res.Answer,
	}
	if res.Reserved != (budget.Amount{}) {
		data.Reserved = &res.Reserved
	}
	if t.Err != nil {
		data.Error = t.Err.Error()
	}
	if err := r.record(journal.Terminated, data); err != nil && t.Reason == Completed {
		// An answer whose journal could not be written is not durable:
		// say so rather than report success.
		res.Termination = Termination{Reason: Failed, Detail: err.Error(), Err: err}
		res.Answer = ""
	}
	r.endSpan(res.Termination, res.Usage, res.Elapsed)
	if r.jw != nil {
		// The terminated line is with the kernel, so a killed process
		// loses nothing; the final fsync (and the saved plan's) finishes in
		// the background, off the caller's path, and Engine.Close waits for
		// it and reports its error.
		jw, saved := r.jw, r.planSaved
		r.e.closing.Add(1)
		go func() {
			defer r.e.closing.Done()
			err := jw.Close()
			if saved != nil {
				err = errors.Join(err, <-saved)
			}
			if err != nil {
				r.e.closeErr(fmt.Errorf("run %s: %w", r.id, err))
			}
		}()
	}
	return res
}

// ownUsage is what this run consumed: all of its accountant's usage, or,
// when the accountant is shared with a caller (a delegation, an evaluator),
// what was added since the run started.
func (r *run) ownUsage() budget.Amount {
	u := usageOf(r.acct)
	if r.ro.Budget == nil {
		return u
	}
	s := r.usageAtStart
	return budget.Amount{
		ModelCalls:       u.ModelCalls - s.ModelCalls,
		ToolCalls:        u.ToolCalls - s.ToolCalls,
		PromptTokens:     u.PromptTokens - s.PromptTokens,
		CompletionTokens: u.CompletionTokens - s.CompletionTokens,
		TotalTokens:      u.TotalTokens - s.TotalTokens,
		CostUSD:          u.CostUSD - s.CostUSD,
	}
}

// classify turns the mode's error into a termination. The run's own
// context tells a budget timeout from a cancellation by the caller.
func (r *run) classify(ctx, parent context.Context, err error) Termination {
	if err == nil {
		return Termination{Reason: Completed}
	}
	var ex *budget.Exceeded
	var den *DenialError
	var term *TerminatedError
	switch {
	case parent.Err() != nil && (errors.Is(err, parent.Err()) || errors.Is(err, context.Canceled)):
		return Termination{Reason: Cancelled, Detail: "cancelled", Err: err}
	case errors.As(err, &ex):
		return exceeded(ex, err)
	case ctx.Err() != nil && parent.Err() == nil:
		if errors.As(context.Cause(ctx), &ex) {
			return exceeded(ex, ex)
		}
		return Termination{Reason: TimedOut, Limit: "timeout", Detail: err.Error(), Err: err}
	case errors.As(err, &den):
		return Termination{Reason: PolicyDenial, Detail: den.Decision.Reason, Err: err}
	case errors.As(err, &term):
		return Termination{Reason: AgentTerminated, Detail: term.Reason, Err: err}
	case parent.Err() != nil:
		return Termination{Reason: Cancelled, Detail: "cancelled", Err: err}
	}
	return Termination{Reason: Failed, Detail: err.Error(), Err: err}
}

func exceeded(ex *budget.Exceeded, err error) Termination {
	switch ex.Limit {
	case "max_iterations":
		return Termination{Reason: MaxIterations, Limit: ex.Limit, Detail: ex.Error(), Err: err}
	case "timeout":
		return Termination{Reason: TimedOut, Limit: ex.Limit, Detail: ex.Error(), Err: err}
	}
	return Termination{Reason: BudgetExceeded, Limit: ex.Limit, Detail: ex.Error(), Err: err}
}

// complete ends the run with an answer.
func (r *run) complete(answer string) {
	r.answer = answer
}

// record appends one journal event and shows it to the observer. Without a
// journal (candidates) the observer still sees it, with no seq. The data is
// redacted once, here, for both. Streamed text held back is shown first,
// so the observer sees the turn before the event that ends it. The line,
// and any held before it, reaches the file before record returns.
func (r *run) record(typ string, data any) error {
	return r.journal(typ, data, false)
}

// hold is mustRecord for the line of a phase that acts on nothing outside
// the process (the model's turn once it has arrived, the gate's decisions,
// the dispatch of tools that only read, a tool's result once every call has
// ended): the line is numbered and shown now and written with the run's
// next line, which the engine always writes before its next effect on the
// world (a call to a tool that writes, an approval request, a recovery, a
// delegation, the next model call, the end of the run). One write then carries a whole iteration's decisions, and a
// process killed in between loses only the part of an iteration that
// resume repeats anyway.
func (r *run) hold(typ string, data any) error {
	if err := r.journal(typ, data, true); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// flushJournal writes the held lines, before an effect on the world.
func (r *run) flushJournal() error {
	if r.jw == nil {
		return nil
	}
	if err := r.jw.Flush(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func (r *run) journal(typ string, data any, hold bool) error {
	r.flushDelta()
	var (
		raw   json.RawMessage
		value any // Event.Value
	)
	if data != nil {
		enc := dataEncoders.Get().(*dataEncoder)
		defer dataEncoders.Put(enc)
		b, err := enc.encode(data)
		if err != nil {
			return fmt.Errorf("journal: %s data: %w", typ, err)
		}
		raw = r.e.secrets.JSON(b)
		if r.e.opts.OnEvent != nil {
			if v := shownValue(data); v != nil && sameBytes(raw, b) && decodesTo(b) {
				value = v
			}
			// The journal only copies the data; an event handler may keep it.
			raw = bytes.Clone(raw)
		}
	}
	ev := journal.Event{Agent: r.agent.Address, Iteration: r.iter, Type: typ, Data: raw, RunID: r.id}
	var seq int64
	if r.jw != nil {
		add := r.jw.Add
		if hold {
			add = r.jw.Hold
		}
		written, err := add(ev)
		if err != nil {
			return err
		}
		seq = written.Seq
	}
	if r.e.opts.OnEvent != nil {
		r.e.emit(Event{Seq: seq, Time: r.e.opts.Now(), RunID: r.id, Agent: r.agent.Address, Depth: r.ro.Depth, Iteration: r.iter, Type: typ, Data: raw, Value: value})
	}
	return nil
}

// sameBytes reports whether a and b are the same memory: the redactor
// returns its input itself when it redacted nothing.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// dataEncoder encodes event data as json.Marshal does into a buffer that
// is reused, event after event, instead of a new slice per event: the
// journal copies the data into its line and keeps nothing of it.
type dataEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var dataEncoders = sync.Pool{New: func() any {
	d := &dataEncoder{}
	d.enc = json.NewEncoder(&d.buf)
	return d
}}

// encode returns json.Marshal(v), in d's buffer: valid until the next
// encode.
func (d *dataEncoder) encode(v any) ([]byte, error) {
	if d.buf.Cap() > 64<<10 {
		d.buf = bytes.Buffer{} // a huge event must not pin its buffer in the pool
	}
	d.buf.Reset()
	if err := d.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(d.buf.Bytes(), []byte("\n")), nil
}

// mustRecord is record for the events the loop cannot continue without: a
// phase that is not on disk must not be followed by the next.
func (r *run) mustRecord(typ string, data any) error {
	if err := r.record(typ, data); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// emitDelta shows a piece of a streamed model turn, redacted. The end of
// the text that could be the start of a secret is held back until the next
// piece shows whether it is one, or until the turn ends (flushDelta).
func (r *run) emitDelta(text string) {
	if r.ro.Quiet || r.e.opts.OnEvent == nil || text == "" {
		return
	}
	r.deltaMu.Lock()
	defer r.deltaMu.Unlock()
	// The reasoning before the answer is shown whole before it.
	r.showDelta(ReasoningDelta, r.heldReasoning)
	r.heldReasoning = ""
	show, hold := r.e.secrets.Stream(r.held + text)
	r.held = hold
	r.showDelta(ContentDelta, show)
}

// emitReasoning is emitDelta for the reasoning text a model sends apart
// from its answer.
func (r *run) emitReasoning(text string) {
	if r.ro.Quiet || r.e.opts.OnEvent == nil || text == "" {
		return
	}
	r.deltaMu.Lock()
	defer r.deltaMu.Unlock()
	show, hold := r.e.secrets.Stream(r.heldReasoning + text)
	r.heldReasoning = hold
	r.showDelta(ReasoningDelta, show)
}

// emitFirstEvent tells the observers that a model call's response began.
func (r *run) emitFirstEvent(model string, after time.Duration) {
	if r.ro.Quiet || r.e.opts.OnEvent == nil {
		return
	}
	data, err := json.Marshal(journal.FirstEventData{Model: model, AfterMS: after.Milliseconds()})
	if err != nil {
		return
	}
	r.e.emit(Event{Time: r.e.opts.Now(), RunID: r.id, Agent: r.agent.Address, Depth: r.ro.Depth, Iteration: r.iter, Type: ModelFirstEvent, Data: data})
}

// emitToolCallDelta shows a piece of a tool call the model is writing,
// redacted as content is: the end of a call's arguments that could be the
// start of a secret is held back until its next piece, or the turn's end.
func (r *run) emitToolCallDelta(p provider.ToolCallPiece) {
	if r.ro.Quiet || r.e.opts.OnEvent == nil {
		return
	}
	r.deltaMu.Lock()
	defer r.deltaMu.Unlock()
	if r.heldCalls == nil {
		r.heldCalls = map[int]string{}
	}
	show, hold := r.e.secrets.Stream(r.heldCalls[p.Index] + p.Arguments)
	r.heldCalls[p.Index] = hold
	if show == "" && p.ID == "" && p.Name == "" {
		return
	}
	r.showToolCallDelta(journal.ToolCallDeltaData{Index: p.Index, ID: p.ID, Name: r.e.secrets.Text(p.Name)}, show)
}

func (r *run) showToolCallDelta(d journal.ToolCallDeltaData, text string) {
	data, err := json.Marshal(d)
	if err != nil {
		return
	}
	r.e.emit(Event{Time: r.e.opts.Now(), RunID: r.id, Agent: r.agent.Address, Depth: r.ro.Depth, Iteration: r.iter, Type: ToolCallDelta, Data: data, Delta: text})
}

// flushDelta shows the text held back: the stream it belonged to ended
// without completing a secret.
func (r *run) flushDelta() {
	r.deltaMu.Lock()
	defer r.deltaMu.Unlock()
	r.showDelta(ReasoningDelta, r.heldReasoning)
	r.showDelta(ContentDelta, r.held)
	r.held, r.heldReasoning = "", ""
	for _, i := range slices.Sorted(maps.Keys(r.heldCalls)) {
		if text := r.heldCalls[i]; text != "" {
			r.showToolCallDelta(journal.ToolCallDeltaData{Index: i}, text)
		}
		delete(r.heldCalls, i)
	}
}

func (r *run) showDelta(typ, text string) {
	if text == "" {
		return
	}
	r.e.emit(Event{Time: r.e.opts.Now(), RunID: r.id, Agent: r.agent.Address, Depth: r.ro.Depth, Iteration: r.iter, Type: typ, Delta: text})
}

func absDir(d string) string {
	if d == "" {
		d = "."
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}
