package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/provider"
)

// Runtime is what a durable runtime (package temporal) puts in place of the
// engine's own goroutines, timers and executors, so that a run it records
// can be replayed step for step: the same plan, the same loop, the same
// gate, only the effects go through it. The engine imports no runtime; a
// nil Runtime (the default) is the local engine, which pays nothing for
// this seam.
//
// With a Runtime, a run must also get Options.Now, Rand and Sleep from the
// runtime (its clock, its seeded randomness, its timers), Models for every
// model address (a provider.Model whose Stream the runtime carries out),
// and an Approver; it writes no journal (RunOptions.NoJournal: the
// runtime's history is the record) and runs plan steps one at a time.
type Runtime struct {
	// Execute carries out one approved tool call (builtins.Options.Execute):
	// the runtime runs it on a worker with Engine.ExecuteCall.
	Execute func(ctx context.Context, x builtins.Execution) (builtins.Result, error)
	// Go runs fns at once, at most limit at a time (all when limit <= 0),
	// and returns when every one has returned.
	Go func(ctx context.Context, limit int, fns []func(context.Context))
	// WithTimeout returns a context that ends with cause once d has passed
	// on the runtime's clock (the budget's timeout, a plan step's).
	WithTimeout func(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc)
	// WithCancel is context.WithCancelCause whose cancellation also ends
	// the runtime's calls in flight under it (a best-of-N run stopping its
	// other candidates).
	WithCancel func(ctx context.Context) (context.Context, context.CancelCauseFunc)
	// Candidate, when set, generates one best-of-N candidate elsewhere (a
	// child workflow) under the allowance the run reserved for it: the
	// runtime runs Engine.RunCandidate there and returns its outcome, which
	// the run settles. When nil, candidates run in the run itself.
	Candidate func(ctx context.Context, c CandidateRun) (CandidateOutcome, error)
	// Delegate, when set, runs one delegation elsewhere (a child workflow)
	// under the share of the run's budget the run reserved for it: the
	// runtime runs Engine.RunDelegation there and returns its outcome,
	// which the run settles. When nil, delegations run in the run itself.
	Delegate func(ctx context.Context, d DelegationRun) (DelegationOutcome, error)
	// ListServers, when set, lists the MCP servers of agent's toolbox on a
	// worker (Engine.ServerListings there) in place of starting them: the
	// runtime keeps the answer in its history, and the toolbox is built
	// from it (builtins.Options.ListServers). When nil, a plan with MCP
	// servers connects them in the run itself.
	ListServers func(ctx context.Context, agent string) ([]builtins.ServerListing, error)
	// Knowledge, when set, is the knowledge store of address store, read
	// where it lives (Engine.RecallKnowledge on a worker) in place of
	// opening its file in the run.
	Knowledge func(store string) builtins.KnowledgeStore
}

// withTimeout is context.WithTimeoutCause on the runtime's clock.
func (e *Engine) withTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if rt := e.opts.Runtime; rt != nil && rt.WithTimeout != nil {
		return rt.WithTimeout(ctx, d, cause)
	}
	return context.WithTimeoutCause(ctx, d, cause)
}

// jitter is a number in [0, 1) from the engine's randomness, for a
// runtime's retry backoff (the local toolbox uses math/rand).
func (e *Engine) jitter() float64 {
	var b [8]byte
	if _, err := e.opts.Rand.Read(b[:]); err != nil {
		return 0.5
	}
	return float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53)
}

// CallModel makes one request to the model at addr, streaming its events
// to onEvent: the model activity of a durable runtime, on a worker whose
// engine was built from the same plan. The provider (and its key, a secret
// of this engine from now on) is built once, as for a local run; the
// response's text passes through this engine's redactor, so no secret
// reaches the runtime's history.
func (e *Engine) CallModel(ctx context.Context, addr string, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	e.registerSecrets()
	spec := e.plan.Model(addr)
	if spec == nil {
		return provider.Response{}, fmt.Errorf("model %q is not in the plan", addr)
	}
	m, err := e.model(spec)
	if err != nil {
		return provider.Response{}, err
	}
	if onEvent == nil {
		onEvent = func(provider.Event) {}
	}
	resp, err := m.Stream(ctx, req, onEvent)
	if err != nil {
		return provider.Response{}, e.secrets.Err(err)
	}
	red := &e.secrets
	resp.Content = red.Text(resp.Content)
	resp.Reasoning = red.Text(resp.Reasoning)
	for i := range resp.ToolCalls {
		resp.ToolCalls[i].Arguments = red.Text(resp.ToolCalls[i].Arguments)
	}
	return resp, nil
}

// StreamShown is the part of a model's streamed text so far that may be
// shown (a worker's heartbeat): the redacted text, less an end that could
// be the start of a secret.
func (e *Engine) StreamShown(text string) string {
	show, _ := e.secrets.Stream(text)
	return show
}

// ExecuteCall runs one tool call that a durable runtime's workflow gated,
// with agent's toolbox (builtins.Toolbox.ExecuteCall): the tool activity on
// a worker. The output passes through this engine's redactor.
func (e *Engine) ExecuteCall(ctx context.Context, agent string, x builtins.Execution) (builtins.Result, error) {
	e.registerSecrets()
	a := e.plan.Agent(agent)
	if a == nil {
		return builtins.Result{}, fmt.Errorf("%w %q", ErrUnknownAgent, agent)
	}
	t, err := e.agentTools(ctx, a)
	if err != nil {
		return builtins.Result{}, err
	}
	res, err := t.box.ExecuteCall(ctx, x)
	res.Content = e.secrets.Text(res.Content)
	return res, e.secrets.Err(err)
}

// ServerListings connects the MCP servers of agent's toolbox (once per
// engine, as a run does) and lists them, with what the lock check found:
// the listing activity on a worker, whose answer the workflow builds its
// toolbox from (Runtime.ListServers). A drift that on_drift refuses fails
// it, as it fails a local run's start.
func (e *Engine) ServerListings(ctx context.Context, agent string) ([]builtins.ServerListing, error) {
	e.registerSecrets()
	a := e.plan.Agent(agent)
	if a == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, agent)
	}
	t, err := e.agentTools(ctx, a)
	if err != nil {
		// The workflow's toolbox names the agent and its tools itself.
		if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), a.Address+": tools: ") {
			err = inner
		}
		return nil, err
	}
	return t.box.Listings()
}

// RecallKnowledge recalls from the knowledge store of address store
// (knowledge.Store.Recall), opened once per engine: the recall activity on
// a worker, whose answer the workflow injects (Runtime.Knowledge).
func (e *Engine) RecallKnowledge(ctx context.Context, store, query string, limit int, threshold float64) ([]knowledge.Scored, error) {
	s, err := e.knowledgeStore(store)
	if err != nil {
		return nil, err
	}
	return s.Recall(ctx, query, limit, threshold)
}
