package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/decisionlog"
	"github.com/symbi-dev/symbi/engine/internal/redact"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/seal"
)

// Options configure an Engine. Every field is optional.
type Options struct {
	// BaseDir is the configuration directory: scripts, policies and tool
	// working directories are relative to it.
	BaseDir string
	// StateDir overrides the plan's state_dir (which is relative to BaseDir).
	StateDir string
	// Protected names files no builtin file tool may read, list or write,
	// besides the state directory and the plan's own files (which the
	// engine protects itself): the var files and the saved plan a run was
	// started from. Relative to the working directory.
	Protected []string
	// LookupEnv resolves env() in deferred strings and api_key_env; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// OnEvent receives every journal event and every streamed content delta,
	// serialised (never two calls at once).
	OnEvent func(Event)
	// Approver decides asks and approval = "always" (terminal prompt or
	// file queue); nil denies them.
	Approver policy.Approver
	// Models replaces the provider of a model address (tests, benchmarks).
	Models map[string]provider.Model
	// Cassette, when set, stands between the runs and every model the
	// engine builds (those of Models excepted): runs call the model it
	// returns for each address, which records their exchanges or answers
	// from recorded ones (a *cassette.Session: symbi run --record and
	// --replay, symbi test).
	Cassette Cassette
	// PolicyContext is the policy input's "context" member: trusted input
	// from whoever runs the engine, never from the model.
	PolicyContext map[string]any
	// Now and Rand make run ids and timestamps reproducible in tests.
	Now  func() time.Time
	Rand io.Reader
	// Sleep waits in recovery backoff; default a context-aware timer.
	Sleep func(context.Context, time.Duration) error
	// Discovery makes an engine that lists and calls tools (Catalog,
	// ToolsOf, Toolbox) for `symbi tools` and the REPL, and opens no
	// knowledge store: listing tools creates no file and takes no store's
	// lock from a run, and the knowledge builtins answer that no store is
	// configured.
	Discovery bool
	// ReadOnlyKnowledge opens knowledge stores read-only (a durable
	// runtime's worker, whose store is shipped with the configuration and
	// checked by digest): recalls read them, writes fail with
	// knowledge.ErrReadOnly, and any number of engines share the file.
	ReadOnlyKnowledge bool

	// Tracer and Meter receive the runs' spans and metrics, through
	// OpenTelemetry's API (package telemetry sets them up from the plan's
	// telemetry block and the environment); nil: none are made, and the
	// loop pays nothing for them. docs/telemetry.md lists what is emitted.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// CaptureContent puts prompts, completions, tool arguments and results
	// on the spans, after the secret redactor.
	CaptureContent bool
	// DecisionLog receives every gate decision in OPA's decision-log
	// format, redacted; nil: none is written. The caller closes it.
	DecisionLog *decisionlog.Writer
	// Version is symbi's version, for the decision log's labels.
	Version string
	// Runtime, when set, carries out the run's effects in place of the
	// engine's goroutines, timers and executors (see Runtime); nil is the
	// local engine.
	Runtime *Runtime

	// slowReadRound replaces slowReadRound (tests: 0 is the default).
	slowReadRound time.Duration
}

// Cassette puts itself between the runs and the model of address addr.
// live builds the model the plan describes, and is called only when a
// call needs the real model (never when every call is answered from a
// recording, so replaying needs no API key). redact takes the run's
// secrets out of an encoded JSON value: whatever the cassette keeps must
// pass through it, as every journal line does.
type Cassette interface {
	Model(addr string, live func() (provider.Model, error), redact func(json []byte) []byte) (provider.Model, error)
}

// Side-effect modes of RunOptions.SideEffects.
const (
	SideEffectsAllow    = "allow"
	SideEffectsReadOnly = "read_only" // only tools with effect none or read
	SideEffectsIsolate  = "isolate"   // no tool calls at all
)

// RunOptions adjust one run.
type RunOptions struct {
	// Temperature and MaxOutputTokens replace the agent's loop settings (best-of-N vary).
	Temperature     *float64
	MaxOutputTokens int
	// SideEffects limits tool calls: "" or allow, read_only, isolate.
	SideEffects string
	// NoJournal persists nothing (best-of-N candidates): no journal, no saved plan.
	NoJournal bool
	// Quiet keeps content deltas from OnEvent (candidates, evaluators).
	Quiet bool
	// Budget is shared with the caller (delegations, candidates); nil: the agent's own.
	Budget *budget.Accountant
	// Depth is the delegation depth; Ancestors the agents above, for cycle detection.
	Depth     int
	Ancestors []string
	// RunID names the run; empty: a new id.
	RunID string
	// Mode replaces the agent's mode (and skips profile selection).
	Mode string
}

// Reason is how a run ended.
type Reason string

const (
	Completed      Reason = "completed"
	MaxIterations  Reason = "max_iterations"
	BudgetExceeded Reason = "budget_exceeded"
	TimedOut       Reason = "timeout"
	PolicyDenial   Reason = "policy_denial"
	Cancelled      Reason = "cancelled"
	Failed         Reason = "error"
)

// Termination is the end of a run: the reason, the budget limit that was hit
// (for budget_exceeded and max_iterations), and the error behind it.
type Termination struct {
	Reason Reason `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	Detail string `json:"detail,omitempty"`
	Err    error  `json:"-"`
}

func (t Termination) String() string {
	s := string(t.Reason)
	if t.Limit != "" {
		s += " (" + t.Limit + ")"
	}
	if t.Detail != "" {
		s += ": " + t.Detail
	}
	return s
}

// Result is the outcome of one run.
type Result struct {
	RunID string
	// TraceID is the OpenTelemetry trace of the run's spans, "" when
	// telemetry is off.
	TraceID     string
	Agent       string // agent address
	Mode        string
	Answer      string
	Termination Termination
	Usage       budget.Amount
	// Reserved is what the run's budget still held, reserved and not yet
	// settled, when the run ended: nothing for a run whose calls are all
	// settled (every run settles its own before it ends), the calls a
	// plan step's siblings have in flight for a step's sub-run.
	Reserved   budget.Amount
	Iterations int
	Elapsed    time.Duration
	// Shadow is, per policy in shadow mode, on how many actions it
	// disagreed with what was enforced.
	Shadow []journal.ShadowTally
	// Approvals counts the answers people gave (or could not give), by
	// code.
	Approvals journal.ApprovalTally
}

// ErrModeUnavailable is returned for a loop mode the engine does not know
// (a hand-edited plan; the compiler checks the mode).
var ErrModeUnavailable = errors.New("unknown loop mode")

// ErrUnknownAgent is returned by Run for an agent the plan does not have.
var ErrUnknownAgent = errors.New("unknown agent")

// Engine runs agents of one plan. It is safe for concurrent runs; policies,
// models and toolboxes are prepared once and shared.
type Engine struct {
	plan *plan.Plan
	opts Options
	inst instruments

	mu        sync.Mutex // guards models, gates, policies and routes
	models    map[string]provider.Model
	gates     map[string]policy.Gate
	policies  *policy.Loader // prepares gates; built on first use
	routes    map[string]*route
	toolMu    sync.Mutex // separate: building a toolbox may resolve secrets
	toolboxes map[string]*agentTools
	// secrets takes every secret the engine resolves out of everything
	// it writes, shows and sends; secretsOnce registers the plan's
	// (registerSecrets) before the first run writes anything.
	secrets     redact.Redactor
	secretsOnce sync.Once

	storeMu sync.Mutex
	stores  map[string]*knowledge.Store

	eventMu sync.Mutex

	planOnce   sync.Once
	planBytes  []byte
	planErr    error
	planDigest string // seal.Digest of planBytes, recorded in started lines

	// key signs the journals; read (or made) once, not per run.
	keyOnce sync.Once
	key     seal.Key
	keyErr  error

	// closing tracks journals closing in the background; Close waits.
	closing   sync.WaitGroup
	errMu     sync.Mutex
	closeErrs []error
}

func (e *Engine) closeErr(err error) {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	e.closeErrs = append(e.closeErrs, err)
}

// Sync waits until every finished run's journal is on stable storage and
// returns the errors met closing them.
func (e *Engine) Sync() error {
	e.closing.Wait()
	e.errMu.Lock()
	defer e.errMu.Unlock()
	err := errors.Join(e.closeErrs...)
	e.closeErrs = nil
	return err
}

// New prepares an engine for p. Policies, models and tools are built lazily
// on first use by a run, so a plan with an agent that cannot start does not
// stop the others.
func New(p *plan.Plan, opts Options) (*Engine, error) {
	if p == nil {
		return nil, errors.New("engine: nil plan")
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir(p, opts.BaseDir)
	}
	return &Engine{
		plan:      p,
		opts:      opts,
		inst:      newInstruments(opts),
		models:    map[string]provider.Model{},
		gates:     map[string]policy.Gate{},
		toolboxes: map[string]*agentTools{},
	}, nil
}

// DefaultStateDir is the plan's state_dir, relative to the configuration
// directory.
func DefaultStateDir(p *plan.Plan, baseDir string) string {
	sd := p.Settings.StateDir
	if sd == "" {
		sd = plan.DefaultStateDir
	}
	if !filepath.IsAbs(sd) {
		sd = filepath.Join(baseDir, sd)
	}
	return sd
}

// planJSON is the plan's canonical JSON, encoded once: every run saves it
// beside its journal.
func (e *Engine) planJSON() ([]byte, error) {
	e.planOnce.Do(func() {
		e.planBytes, e.planErr = plan.Encode(e.plan)
		if e.planErr == nil {
			e.planDigest = seal.Digest(e.planBytes)
		}
	})
	return e.planBytes, e.planErr
}

// stateKey is the state directory's key, which signs every journal the
// engine writes.
func (e *Engine) stateKey() (seal.Key, error) {
	e.keyOnce.Do(func() { e.key, e.keyErr = seal.Open(e.opts.StateDir) })
	return e.key, e.keyErr
}

// planDigestOf is seal.Digest of planJSON, which started lines record; ""
// when the plan cannot be encoded (and no run can start).
func (e *Engine) planDigestOf() string {
	e.planJSON()
	return e.planDigest
}

// usePlanJSON makes b, the saved plan the engine's plan was decoded from,
// the bytes runs save and whose digest they record: a resumed run records
// the digest of exactly the file it checked, whatever a re-encoding would
// give. It must be called before the first run.
func (e *Engine) usePlanJSON(b []byte) {
	e.planOnce.Do(func() { e.planBytes, e.planDigest = b, seal.Digest(b) })
}

// Plan returns the plan the engine runs.
func (e *Engine) Plan() *plan.Plan { return e.plan }

// StateDir is where journals and queues live.
func (e *Engine) StateDir() string { return e.opts.StateDir }

// Close waits for finished runs' journals to reach stable storage, then
// releases tool processes and connections.
func (e *Engine) Close() error {
	errs := []error{e.Sync()}
	e.toolMu.Lock()
	defer e.toolMu.Unlock()
	for _, t := range e.toolboxes {
		if t.box != nil {
			errs = append(errs, t.box.Close())
		}
	}
	e.toolboxes = map[string]*agentTools{}
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	for _, s := range e.stores {
		errs = append(errs, s.Close())
	}
	e.stores = nil
	return errors.Join(errs...)
}

// AgentAddress resolves "name" or "agent.name" to an agent of the plan. An
// empty name picks the only agent.
func (e *Engine) AgentAddress(name string) (string, error) {
	if name == "" {
		switch len(e.plan.Agents) {
		case 0:
			return "", fmt.Errorf("%w: the configuration has no agent", ErrUnknownAgent)
		case 1:
			return e.plan.Agents[0].Address, nil
		default:
			names := make([]string, len(e.plan.Agents))
			for i, a := range e.plan.Agents {
				names[i] = strings.TrimPrefix(a.Address, "agent.")
			}
			return "", fmt.Errorf("%w: the configuration has %d agents (%s); choose one with --agent", ErrUnknownAgent, len(names), strings.Join(names, ", "))
		}
	}
	addr := name
	if !strings.HasPrefix(addr, "agent.") {
		addr = "agent." + name
	}
	if e.plan.Agent(addr) == nil {
		return "", fmt.Errorf("%w %q", ErrUnknownAgent, name)
	}
	return addr, nil
}

// emit hands an event to the observer, one at a time.
func (e *Engine) emit(ev Event) {
	if e.opts.OnEvent == nil {
		return
	}
	e.eventMu.Lock()
	defer e.eventMu.Unlock()
	e.opts.OnEvent(ev)
}

// addSecret makes s a secret: from now on it is redacted from the journal,
// the events, the streamed answer, the Result, the dead-letter file and
// model requests.
func (e *Engine) addSecret(s string) { e.secrets.Add(s) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
