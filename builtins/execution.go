package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Execution is one tool call as a durable runtime carries it to a worker:
// the tool, its arguments exactly as the gate approved them, the call's
// idempotency key and the timeout it runs under. A runtime's Execute hook
// (Options.Execute) receives it in place of running the executor; the
// worker's toolbox runs it with ExecuteCall.
type Execution struct {
	// Agent is the agent whose toolbox runs the call (the engine sets it).
	Agent          string          `json:"agent"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// Timeout is the shorter of the tool's timeout and the loop's
	// tool_timeout; zero is none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Definition is the digest of an MCP server tool's canonical
	// definition as the run was offered it (its listing): the worker runs
	// the call only when its server's tool is the same.
	Definition string `json:"definition,omitempty"`
}

// ExecuteCall runs one call that a durable runtime's workflow has already
// gated (its toolbox, built from the same plan, made the Execution from a
// policy.Approved): the arguments are checked against the schema again,
// the executor runs under the timeout with the idempotency key, and a
// failure is a *Failure. Circuit breakers and cached results are the
// workflow's (its toolbox's), not the worker's, so they replay with it.
//
// The worker trusts its workflow as the local toolbox trusts its engine:
// the Temporal namespace is the boundary (docs/temporal.md).
func (tb *Toolbox) ExecuteCall(ctx context.Context, x Execution) (Result, error) {
	e, err := tb.lookup(x.Tool)
	if err != nil {
		return Result{}, err
	}
	if e.server != nil && tb.opts.Lock != nil && e.server.listChanged.Load() {
		// The server said its tools changed: list and check them against
		// the lock here (on_drift decides, as in a local run) before the
		// call, and run it only if its tool is still offered.
		if _, err := tb.Refresh(ctx); err != nil {
			return Result{}, fail(Error, x.Tool, fmt.Errorf("%s changed its tools: %w", e.server.address, err))
		}
		if e, err = tb.lookup(x.Tool); err != nil {
			return Result{}, err
		}
	}
	if x.Definition != "" && x.Definition != e.definition {
		// The run was offered another tool under this name (another
		// version of the server on the worker that listed it).
		return Result{}, fail(Error, x.Tool, fmt.Errorf("this worker's %s offers another definition of the tool than the one the run was offered (%s here, %s in the run); deploy the same server to every worker", serverOf(e), short(e.definition), short(x.Definition)))
	}
	if err := validateArgs(e.schema, x.Arguments); err != nil {
		return Result{}, fail(InvalidArguments, x.Tool, err)
	}
	if e.check != nil {
		if err := e.check(x.Arguments); err != nil {
			return Result{}, fail(InvalidArguments, x.Tool, err)
		}
	}
	if e.keyed && x.IdempotencyKey != "" {
		ctx = context.WithValue(ctx, idempotencyKey{}, x.IdempotencyKey)
	}
	t := e.timeout
	if x.Timeout > 0 && (t <= 0 || x.Timeout < t) {
		t = x.Timeout
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if t > 0 {
		cctx, cancel = context.WithTimeout(ctx, t)
	}
	defer cancel()
	start := time.Now()
	content, c, err := safeRun(cctx, e.run, x.Arguments, e.maxOutput)
	elapsed := time.Since(start)
	if err != nil {
		f, _ := classify(ctx, cctx, x.Tool, t, err)
		return Result{Elapsed: elapsed, Tool: x.Tool}, f
	}
	r := Result{Content: content, Truncated: c.truncated, Elapsed: elapsed, Tool: x.Tool}
	if c.truncated {
		r.Limit, r.Size = e.maxOutput, c.size
	}
	return r, nil
}

// execute hands a call to Options.Execute (the runtime's worker runs it)
// and classifies what comes back as the local executor's outcome is.
func (tb *Toolbox) execute(ctx context.Context, e *entry, name string, args json.RawMessage, timeout time.Duration) (Result, error) {
	r, err := tb.opts.Execute(ctx, Execution{Tool: name, Arguments: args, IdempotencyKey: idempotencyKeyOf(ctx), Timeout: timeout, Definition: e.definition})
	if err != nil {
		var f *Failure
		if !errors.As(err, &f) {
			err = fail(Error, name, err)
		}
		return Result{Elapsed: r.Elapsed, Tool: name}, err
	}
	r.Tool = name
	return r, nil
}

func serverOf(e *entry) string {
	if e.server != nil {
		return e.server.address
	}
	return "tool"
}

func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
