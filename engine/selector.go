package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine/internal/bestofn"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// selectorSchema is the JSON Schema of a command selector's input
// (bestofn.SelectorInput): what the gate validates and the policies see as
// the call's arguments.
var selectorSchema = json.RawMessage(`{"type":"object","required":["best_of_n","task","candidates"],"properties":{` +
	`"best_of_n":{"type":"string"},"task":{"type":"string"},"candidates":{"type":"array","items":{"type":"object",` +
	`"required":["index","content","score"],"properties":{"index":{"type":"integer"},"content":{"type":"string"},"score":{"type":"number"}}}}}}`)

// selectorCallID is the call id of a command selector's call: one per run.
const selectorCallID = "select"

// commandSelect runs a best_of_n block's command selector: a tool call of
// the tool named after the block (its address, "best_of_n.answer"), with
// the eligible candidates as its arguments, gated by the agent's policies
// like any tool call (schema, side-effect mode, policies, a person when
// one asks), counted on the aggregate budget as one tool call in one round,
// journalled as policy_evaluated, tools_dispatched and tool_result, and run
// by the toolbox's command executor: no shell, its own process group, the
// parent-death signal, the call's idempotency key in SYMBI_IDEMPOTENCY_KEY,
// its output capped. Its output is hostile and parsed strictly
// (bestofn.ParseChoice). A denial is a *DenialError; every other failure
// an error: either way nothing is selected.
func (e *Engine) commandSelect(ctx context.Context, r *run, bon *plan.BestOfN, input string, cs []bestofn.Candidate) (bestofn.Choice, error) {
	args, eligible, err := bestofn.SelectorInput(bon.Address, input, cs)
	if err != nil {
		return bestofn.Choice{}, err
	}
	tools, err := e.selectorTools(ctx, bon)
	if err != nil {
		return bestofn.Choice{}, err
	}
	// The gate sees the selector as the run's one tool; the candidates ran
	// with the agent's.
	agentTools := r.tools
	r.tools = tools
	defer func() { r.tools = agentTools }()
	name := bon.Address
	a := policy.Action{Type: policy.ToolCall, Tool: name, CallID: selectorCallID, Arguments: args}
	if info, ok := tools.info[name]; ok {
		a.Effect, a.Tags = info.Effect, info.Tags
	}
	g := r.gateAction(ctx, a)
	if err := r.recordGate([]gated{g}); err != nil {
		return bestofn.Choice{}, err
	}
	if !g.ok {
		if g.kind == obsDenied {
			return bestofn.Choice{}, &DenialError{Action: g.action, Decision: g.decision}
		}
		return bestofn.Choice{}, fmt.Errorf("command selector %s: %s", name, g.note)
	}
	if err := r.acct.ToolRound(); err != nil {
		return bestofn.Choice{}, err
	}
	if err := r.acct.ReserveToolCalls(1); err != nil {
		return bestofn.Choice{}, err
	}
	call := g.approved.Action()
	dc := journal.ToolsDispatchedData{Calls: []journal.DispatchedCall{{CallID: call.CallID, Tool: call.Tool, Arguments: call.Arguments}}, Concurrency: 1}
	if err := r.mustRecord(journal.ToolsDispatched, dc); err != nil {
		return bestofn.Choice{}, err
	}
	out := tools.box.Dispatch(builtins.WithCallScope(ctx, r.id, r.iter), []policy.Approved{g.approved}, 1, r.agent.Loop.ToolTimeout.Std())[0]
	res := out.Result
	data := journal.ToolResultData{CallID: call.CallID, Tool: call.Tool, DurationMS: res.Elapsed.Milliseconds(), Truncated: res.Truncated}
	if out.Err != nil {
		data.Error, data.ErrorKind = out.Err.Error(), string(builtins.KindOf(out.Err))
	} else {
		data.Output = res.Content
	}
	if err := r.mustRecord(journal.ToolResult, data); err != nil {
		return bestofn.Choice{}, err
	}
	switch {
	case out.Err != nil:
		return bestofn.Choice{}, fmt.Errorf("command selector %s: %w", name, out.Err)
	case res.Truncated:
		return bestofn.Choice{}, fmt.Errorf("command selector %s: %w: it printed more than %d bytes", name, bestofn.ErrBadChoice, bestofn.MaxChoiceBytes)
	}
	ch, err := bestofn.ParseChoice(res.Content, eligible)
	if err != nil {
		return bestofn.Choice{}, fmt.Errorf("command selector %s: %w", name, err)
	}
	return ch, nil
}

// selectorTools builds (once per engine) the toolbox of a best_of_n block's
// command selector: one command tool, named after the block, that only
// this block's runs call. It is offered to no model.
func (e *Engine) selectorTools(ctx context.Context, bon *plan.BestOfN) (*agentTools, error) {
	e.toolMu.Lock()
	defer e.toolMu.Unlock()
	if t, ok := e.toolboxes[bon.Address]; ok {
		return t, nil
	}
	sel := bon.Selector
	if sel.Command == nil || len(sel.Command.Argv) == 0 {
		return nil, fmt.Errorf("%s: the command selector has no argv", bon.Address)
	}
	tool := plan.DefaultTool()
	tool.Address = "tool." + bon.Address
	tool.Description = "The command selector of " + bon.Address + ": picks one of the eligible candidates."
	tool.Parameters = selectorSchema
	tool.Executor = plan.Executor{Kind: "command", Command: sel.Command}
	if sel.Effect != "" {
		tool.Effect = sel.Effect
	}
	if sel.Timeout > 0 {
		tool.Timeout = sel.Timeout
	} else {
		tool.Timeout = plan.DefaultSelectorTimeout
	}
	tool.MaxOutputBytes = bestofn.MaxChoiceBytes
	tool.OnResume = plan.DefaultOnResume(tool.Effect)
	opts := builtins.Options{
		BaseDir:    e.opts.BaseDir,
		StateDir:   e.opts.StateDir,
		Workspace:  e.workspace(),
		Protected:  e.protected(),
		Resolve:    e.resolve,
		ResolveURL: e.resolveURL,
		Redact:     e.secrets.JSON,
		Now:        e.opts.Now,
		Sleep:      e.opts.Sleep,
	}
	box, err := builtins.NewToolbox(ctx, []plan.Tool{tool}, nil, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: command selector: %w", bon.Address, err)
	}
	name := bon.Address
	info, _ := box.Info(name)
	t := &agentTools{box: box, info: map[string]builtins.Info{name: info}}
	e.toolboxes[bon.Address] = t
	return t, nil
}
