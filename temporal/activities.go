package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/seal"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// ModelCall is the model activity's input: which model of which plan, and
// the request exactly as the engine made it.
type ModelCall struct {
	PlanDigest string `json:"plan_digest"`
	// ScriptsDigest is the run's contract.Start.ScriptsDigest: the worker
	// checks its scripts against the run's before it runs anything.
	ScriptsDigest string           `json:"scripts_digest,omitempty"`
	Model         string           `json:"model"`
	Request       provider.Request `json:"request"`
	// Stream: the text may be shown as it arrives (the heartbeat carries
	// it); false for a call the engine keeps quiet.
	Stream bool `json:"stream,omitempty"`
}

// ToolCall is the tool activity's input: the agent whose toolbox runs it,
// and the Execution the workflow's toolbox made of an approved call.
type ToolCall struct {
	PlanDigest    string             `json:"plan_digest"`
	ScriptsDigest string             `json:"scripts_digest,omitempty"`
	Execution     builtins.Execution `json:"execution"`
}

// ToolOutcome is the tool activity's result: a tool's failure is a result
// too (the workflow's recovery chain decides what follows, as a local
// run's does), so Temporal retries the activity only when its worker is
// lost.
type ToolOutcome struct {
	Content   string `json:"content,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms"`
	// Failure, when set, is the *builtins.Failure the call ended with.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is a builtins.Failure as it crosses the wire.
type Failure struct {
	Kind       builtins.FailureKind `json:"kind"`
	Message    string               `json:"message"`
	RetryAfter time.Duration        `json:"retry_after,omitempty"`
}

// Activities run on every worker. Each holds one engine per plan and
// scripts digest while activities use it (enginecache.go), built from the
// plan (asked of the workflow, with the scripts' digests, when this worker
// has none) after the worker's files and scripts passed the run's digests.
type Activities struct {
	BaseDir string
	// Client asks a run's workflow for its plan (PlanQuery).
	Client client.Client
	// Models replaces providers (tests): passed to every engine.
	Models map[string]provider.Model
	// EngineIdle is how long an engine no activity uses is kept, with the
	// MCP servers it started (DefaultEngineIdle when zero); MaxEngines
	// bounds the engines kept (DefaultMaxEngines when zero).
	EngineIdle time.Duration
	MaxEngines int

	once  sync.Once
	cache *idleCache[*engine.Engine]
}

func (a *Activities) engines() *idleCache[*engine.Engine] {
	a.once.Do(func() { a.cache = newIdleCache[*engine.Engine](a.EngineIdle, a.MaxEngines) })
	return a.cache
}

// Close releases every engine's tools.
func (a *Activities) Close() error {
	return a.engines().close()
}

// engine returns the engine of the plan with digest d and the scripts
// with digest sd (contract.ScriptsDigest; empty for a run whose client
// did not list them), building it when this worker holds none, and the
// release the activity calls when it is done with it.
func (a *Activities) engine(ctx context.Context, d, sd string) (*engine.Engine, func(), error) {
	key := engineKey(d, sd)
	if e, release, ok := a.engines().acquire(key); ok {
		return e, release, nil
	}
	info := activity.GetInfo(ctx)
	if a.Client == nil {
		return nil, nil, errors.New("this worker has no client to ask the run for its plan")
	}
	id, run := info.WorkflowExecution.ID, info.WorkflowExecution.RunID
	v, err := a.Client.QueryWorkflow(ctx, id, run, contract.PlanQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("asking run %s for its plan: %w", id, err)
	}
	var b []byte
	if err := v.Get(&b); err != nil {
		return nil, nil, err
	}
	if got := seal.Digest(b); got != d {
		return nil, nil, fmt.Errorf("run %s answered a plan with digest %s, not %s", id, got, d)
	}
	in := contract.Start{Plan: b, PlanDigest: d, ScriptsDigest: sd}
	if sd != "" {
		v, err := a.Client.QueryWorkflow(ctx, id, run, contract.ScriptsQuery)
		if err != nil {
			return nil, nil, fmt.Errorf("asking run %s for its scripts' digests: %w", id, err)
		}
		if err := v.Get(&in.Scripts); err != nil {
			return nil, nil, err
		}
	}
	e, err := a.build(in)
	if err != nil {
		return nil, nil, err
	}
	e, release := a.engines().addAcquired(key, e)
	return e, release, nil
}

// engineKey keys the engines by plan and scripts.
func engineKey(d, sd string) string { return d + "+" + sd }

// build checks the digests of in (Start.Decode) and this worker's files
// and scripts against them (Start.Verify), then builds the engine of its
// plan.
func (a *Activities) build(in contract.Start) (*engine.Engine, error) {
	p, err := in.Decode()
	if err != nil {
		return nil, err
	}
	if err := in.Verify(p, a.BaseDir); err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrFileMismatch, nil)
	}
	// A knowledge store is read where it is shipped, by digest: never
	// written on a worker, and shared by every worker on the machine.
	return engine.New(p, engine.Options{BaseDir: a.BaseDir, Models: a.Models, ReadOnlyKnowledge: true})
}

// Model is the model activity: one streamed model call. The text streamed
// so far is the activity's heartbeat, which `symbi run --temporal` reads
// to show the answer as it arrives; none of it enters the history.
func (a *Activities) Model(ctx context.Context, in ModelCall) (provider.Response, error) {
	e, release, err := a.engine(ctx, in.PlanDigest, in.ScriptsDigest)
	if err != nil {
		return provider.Response{}, err
	}
	defer release()
	var mu sync.Mutex
	var text strings.Builder
	beat := func() {
		s := ""
		if in.Stream {
			mu.Lock()
			s = e.StreamShown(text.String())
			mu.Unlock()
		}
		activity.RecordHeartbeat(ctx, s)
	}
	stop := heartbeats(ctx, beat)
	defer stop()
	resp, err := e.CallModel(ctx, in.Model, in.Request, func(ev provider.Event) {
		if ev.ContentDelta == "" || !in.Stream {
			return
		}
		mu.Lock()
		text.WriteString(ev.ContentDelta)
		mu.Unlock()
		beat() // the SDK throttles heartbeats (worker option)
	})
	if err != nil {
		return provider.Response{}, modelError(err)
	}
	return resp, nil
}

// heartbeats beats every second until stop: a worker that dies mid-call
// is noticed within the heartbeat timeout, and the call runs again
// elsewhere.
func heartbeats(ctx context.Context, beat func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				beat()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// modelError carries a provider failure to the workflow with its kind as
// the error type. The provider has already retried it as the plan's retry
// block says, so Temporal does not retry it again: only a lost worker (a
// heartbeat timeout) makes the activity run again.
func modelError(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return temporal.NewNonRetryableApplicationError(err.Error(), string(pe.Kind), nil, modelErrorDetails{Kind: pe.Kind, Detail: pe.Detail, StatusCode: pe.StatusCode, RetryAfter: pe.RetryAfter})
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), "error", nil)
}

type modelErrorDetails struct {
	Kind       provider.ErrorKind `json:"kind"`
	Detail     string             `json:"detail,omitempty"`
	StatusCode int                `json:"status_code,omitempty"`
	RetryAfter time.Duration      `json:"retry_after,omitempty"`
}

// Tool is the tool activity: one approved call, run with the call's
// idempotency key (workflow id / iteration / call id: the same through
// every retry of this activity).
func (a *Activities) Tool(ctx context.Context, in ToolCall) (ToolOutcome, error) {
	e, release, err := a.engine(ctx, in.PlanDigest, in.ScriptsDigest)
	if err != nil {
		return ToolOutcome{}, err
	}
	defer release()
	stop := heartbeats(ctx, func() { activity.RecordHeartbeat(ctx) })
	defer stop()
	res, err := e.ExecuteCall(ctx, in.Execution.Agent, in.Execution)
	out := ToolOutcome{Content: res.Content, Truncated: res.Truncated, ElapsedMS: res.Elapsed.Milliseconds()}
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled or timed out here: not the tool's answer.
			return ToolOutcome{}, ctx.Err()
		}
		f := &Failure{Kind: builtins.KindOf(err), Message: err.Error()}
		var bf *builtins.Failure
		if errors.As(err, &bf) {
			f.RetryAfter = bf.RetryAfter
			if bf.Err != nil {
				f.Message = bf.Err.Error()
			}
		}
		out.Failure = f
	}
	return out, nil
}

// activityModels are the engine's models in a workflow: each call is a
// model activity.
func activityModels(p *plan.Plan, rt *runtime, digest, scripts string) map[string]provider.Model {
	out := map[string]provider.Model{}
	for i := range p.Models {
		m := &p.Models[i]
		out[m.Address] = &activityModel{rt: rt, spec: m, digest: digest, scripts: scripts}
	}
	return out
}

type activityModel struct {
	rt      *runtime
	spec    *plan.Model
	digest  string
	scripts string // contract.ScriptsDigest
}

// modelOptions: the activity may take the model's total timeout (and its
// transport retries) plus a margin, heartbeats every second, and runs
// again on another worker when its own is lost.
func modelOptions(m *plan.Model) workflow.ActivityOptions {
	total := m.Timeouts.Total.Std()
	if total <= 0 {
		total = 10 * time.Minute
	}
	attempts := max(m.Retry.MaxAttempts, 1)
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(attempts)*(total+m.Retry.MaxBackoff.Std()) + 30*time.Second,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    5,
			NonRetryableErrorTypes: []string{
				string(provider.AuthenticationFailed), string(provider.InvalidRequest), string(provider.MissingAPIKey),
			},
		},
	}
}

func (m *activityModel) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	w := workflow.WithActivityOptions(workflowOf(ctx), modelOptions(m.spec))
	var resp provider.Response
	err := workflow.ExecuteActivity(w, contract.ModelActivity, ModelCall{PlanDigest: m.digest, ScriptsDigest: m.scripts, Model: m.spec.Address, Request: req, Stream: !provider.Quiet(ctx)}).Get(w, &resp)
	m.rt.sync()
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, providerError(err)
	}
	// The turn arrives whole: the engine streams it to its observer (and
	// counts it against the budget) as one piece.
	if resp.Reasoning != "" {
		onEvent(provider.Event{ReasoningDelta: resp.Reasoning})
	}
	if resp.Content != "" {
		onEvent(provider.Event{ContentDelta: resp.Content})
	}
	for _, c := range resp.ToolCalls {
		onEvent(provider.Event{ToolCallDelta: c.Name + c.Arguments})
	}
	return resp, nil
}

// providerError makes the activity's failure a *provider.Error again.
func providerError(err error) error {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		var d modelErrorDetails
		if ae.HasDetails() && ae.Details(&d) == nil && d.Kind != "" {
			return &provider.Error{Kind: d.Kind, Detail: d.Detail, StatusCode: d.StatusCode, RetryAfter: d.RetryAfter, Err: errors.New(trimKind(ae.Message(), d))}
		}
		return errors.New(ae.Message())
	}
	var te *temporal.TimeoutError
	if errors.As(err, &te) {
		return &provider.Error{Kind: provider.Timeout, Detail: "activity", Err: err}
	}
	return err
}

// trimKind is the message without the kind, status and detail that
// provider.Error prints again.
func trimKind(msg string, d modelErrorDetails) string {
	e := &provider.Error{Kind: d.Kind, Detail: d.Detail, StatusCode: d.StatusCode}
	return strings.TrimPrefix(strings.TrimPrefix(msg, e.Error()), ": ")
}

// toolRunner is engine.Runtime.Execute: each call a tool activity.
type toolRunner struct {
	rt      *runtime
	digest  string
	scripts string         // contract.ScriptsDigest
	runs    map[string]int // executions per idempotency key, for activity ids
}

func (t *toolRunner) execute(ctx context.Context, x builtins.Execution) (builtins.Result, error) {
	w := workflowOf(ctx)
	if t.runs == nil {
		t.runs = map[string]int{}
	}
	t.runs[x.IdempotencyKey]++
	// The activity id is the key without the run's id (which is the
	// workflow's), and the execution's number: the tool's key is
	// "workflow id / activity id" without the number, the same through
	// Temporal's retries and the recovery chain's.
	id := strings.TrimPrefix(x.IdempotencyKey, workflow.GetInfo(w).WorkflowExecution.ID+"/")
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	w = workflow.WithActivityOptions(w, workflow.ActivityOptions{
		ActivityID:          fmt.Sprintf("tool/%s#%d", id, t.runs[x.IdempotencyKey]),
		StartToCloseTimeout: timeout + 30*time.Second,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{ErrFileMismatch},
		},
	})
	var out ToolOutcome
	err := workflow.ExecuteActivity(w, contract.ToolActivity, ToolCall{PlanDigest: t.digest, ScriptsDigest: t.scripts, Execution: x}).Get(w, &out)
	t.rt.sync()
	res := builtins.Result{Content: out.Content, Truncated: out.Truncated, Elapsed: time.Duration(out.ElapsedMS) * time.Millisecond}
	switch {
	case err != nil && ctx.Err() != nil:
		return res, &builtins.Failure{Kind: builtins.Error, Tool: x.Tool, Err: fmt.Errorf("cancelled: %w", ctx.Err())}
	case err != nil:
		return res, &builtins.Failure{Kind: builtins.Error, Tool: x.Tool, Err: err}
	case out.Failure != nil:
		return res, &builtins.Failure{Kind: out.Failure.Kind, Tool: x.Tool, Err: errors.New(out.Failure.Message), RetryAfter: out.Failure.RetryAfter}
	}
	return res, nil
}

// Prepare builds the engine of a run's plan on this worker ahead of its
// activities (a test environment, which has no client to ask the run).
func (a *Activities) Prepare(in contract.Start) error {
	e, err := a.build(in)
	if err != nil {
		return err
	}
	a.engines().add(engineKey(in.PlanDigest, in.ScriptsDigest), e)
	return nil
}

// ServersCall is the servers activity's input: the agent whose toolbox's
// MCP servers to list, of which plan.
type ServersCall struct {
	PlanDigest    string `json:"plan_digest"`
	ScriptsDigest string `json:"scripts_digest,omitempty"`
	Agent         string `json:"agent"`
}

// ErrDrift is the servers activity's error type when the lock check
// refused a server (on_drift = "refuse"): not retried, the run does not
// start, as a local one does not.
const ErrDrift = "drift"

// Servers is the servers activity: this worker's engine of the plan
// connects the agent's MCP servers (once: they stay up for the plan's later
// activities on this worker, and stop when the worker does), checks them
// against the lock as a local run does, and lists them. The listing is the
// activity's result, so it is in the history and the workflow's toolbox is
// the same on every replay.
func (a *Activities) Servers(ctx context.Context, in ServersCall) ([]builtins.ServerListing, error) {
	e, release, err := a.engine(ctx, in.PlanDigest, in.ScriptsDigest)
	if err != nil {
		return nil, err
	}
	defer release()
	stop := heartbeats(ctx, func() { activity.RecordHeartbeat(ctx) })
	defer stop()
	ls, err := e.ServerListings(ctx, in.Agent)
	if err != nil {
		if errors.Is(err, builtins.ErrDrift) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrDrift, nil)
		}
		return nil, err
	}
	return ls, nil
}

// serverLister is engine.Runtime.ListServers: the servers activity, on any
// worker.
type serverLister struct {
	rt      *runtime
	plan    *plan.Plan
	digest  string
	scripts string
}

func (l *serverLister) list(ctx context.Context, agent string) ([]builtins.ServerListing, error) {
	// Time to start and list every server the agent's toolbox may connect,
	// one after the other, and a margin.
	var total time.Duration
	for i := range l.plan.MCPServers {
		t := l.plan.MCPServers[i].Timeout.Std()
		if t <= 0 {
			t = plan.DefaultMCPServerTimeout.Std()
		}
		total += t
	}
	w := workflow.WithActivityOptions(workflowOf(ctx), workflow.ActivityOptions{
		StartToCloseTimeout: total + 30*time.Second,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{ErrFileMismatch, ErrDrift},
		},
	})
	var out []builtins.ServerListing
	err := workflow.ExecuteActivity(w, contract.ServersActivity, ServersCall{PlanDigest: l.digest, ScriptsDigest: l.scripts, Agent: agent}).Get(w, &out)
	l.rt.sync()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			return nil, errors.New(ae.Message())
		}
		return nil, err
	}
	return out, nil
}

// KnowledgeCall is the knowledge activity's input: one recall from one
// store of a plan.
type KnowledgeCall struct {
	PlanDigest    string  `json:"plan_digest"`
	ScriptsDigest string  `json:"scripts_digest,omitempty"`
	Store         string  `json:"store"`
	Query         string  `json:"query"`
	Limit         int     `json:"limit"`
	Threshold     float64 `json:"threshold"`
}

// Knowledge is the knowledge activity: a recall from this worker's copy of
// the store (read-only, checked by digest with the plan's other files).
// Its answer is in the history, so a replay injects the same facts.
func (a *Activities) Knowledge(ctx context.Context, in KnowledgeCall) ([]knowledge.Scored, error) {
	e, release, err := a.engine(ctx, in.PlanDigest, in.ScriptsDigest)
	if err != nil {
		return nil, err
	}
	defer release()
	return e.RecallKnowledge(ctx, in.Store, in.Query, in.Limit, in.Threshold)
}

// knowledgeOn is engine.Runtime.Knowledge: a store whose recalls are
// knowledge activities and which the run cannot write (a worker's store is
// the configuration's, shipped with it and checked by digest).
func knowledgeOn(rt *runtime, digest, scripts string) func(string) builtins.KnowledgeStore {
	return func(store string) builtins.KnowledgeStore {
		return &knowledgeStore{rt: rt, digest: digest, scripts: scripts, store: store}
	}
}

type knowledgeStore struct {
	rt              *runtime
	digest, scripts string
	store           string
}

func (k *knowledgeStore) Recall(ctx context.Context, query string, limit int, threshold float64) ([]knowledge.Scored, error) {
	w := workflow.WithActivityOptions(workflowOf(ctx), workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{ErrFileMismatch},
		},
	})
	var out []knowledge.Scored
	err := workflow.ExecuteActivity(w, contract.KnowledgeActivity, KnowledgeCall{
		PlanDigest: k.digest, ScriptsDigest: k.scripts, Store: k.store, Query: query, Limit: limit, Threshold: threshold,
	}).Get(w, &out)
	k.rt.sync()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			return nil, errors.New(ae.Message())
		}
		return nil, err
	}
	return out, nil
}

func (k *knowledgeStore) Put(context.Context, knowledge.Fact) error {
	return fmt.Errorf("%w: %s on Temporal is the configuration's, read on the workers and never written by a run", knowledge.ErrReadOnly, k.store)
}
