package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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

// scorerSchema is the JSON Schema of a command scorer's input: one
// candidate, what the gate validates and the policies see as the call's
// arguments.
var scorerSchema = json.RawMessage(`{"type":"object","required":["index","task","content","usage","elapsed"],"properties":{` +
	`"index":{"type":"integer"},"task":{"type":"string"},"content":{"type":"string"},"elapsed":{"type":"number"},` +
	`"usage":{"type":"object"}}}`)

// scorerSuffix names a block's command scorer after the block:
// best_of_n.answer.scorer.
const scorerSuffix = ".scorer"

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
	name := bon.Address
	res, failed, err := r.callBlockTool(ctx, tools, name, selectorCallID, args)
	switch {
	case err != nil:
		return bestofn.Choice{}, err
	case failed != nil:
		return bestofn.Choice{}, fmt.Errorf("command selector %w", failed)
	case res.Truncated:
		return bestofn.Choice{}, fmt.Errorf("command selector %s: %w: it printed more than %d bytes", name, bestofn.ErrBadChoice, bestofn.MaxChoiceBytes)
	}
	ch, err := bestofn.ParseChoice(res.Content, eligible)
	if err != nil {
		return bestofn.Choice{}, fmt.Errorf("command selector %s: %w", name, err)
	}
	return ch, nil
}

// callBlockTool makes the one call of a best_of_n block's own tool (its
// command selector or scorer) in r: gated by the agent's policies like any
// tool call (schema, side-effect mode, policies, a person when one asks),
// counted on r's budget as one tool call in one round, journalled as
// policy_evaluated, tools_dispatched and tool_result, and run by the
// toolbox's command executor. A call that ran and failed is failed, naming
// the tool; err is what ends the run before the call or after it: a denial
// (*DenialError), a refusal, a limit reached, the journal failing. Scorers
// call it concurrently: the gate, which sees tools as the run's only tool,
// is taken one call at a time.
func (r *run) callBlockTool(ctx context.Context, tools *agentTools, name, callID string, args json.RawMessage) (res builtins.Result, failed, err error) {
	a := policy.Action{Type: policy.ToolCall, Tool: name, CallID: callID, Arguments: args}
	if info, ok := tools.info[name]; ok {
		a.Effect, a.Tags = info.Effect, info.Tags
	}
	r.blockMu.Lock()
	agentTools := r.tools
	r.tools = tools
	g := r.gateAction(ctx, a)
	r.tools = agentTools
	err = r.recordGate([]gated{g})
	if err == nil && !g.ok {
		if g.kind == obsDenied {
			err = &DenialError{Action: g.action, Decision: g.decision}
		} else {
			err = fmt.Errorf("%s: %s", name, g.note)
		}
	}
	if err == nil {
		err = r.acct.ToolRound()
	}
	if err == nil {
		err = r.acct.ReserveToolCalls(1)
	}
	call := g.approved.Action()
	if err == nil {
		dc := journal.ToolsDispatchedData{Calls: []journal.DispatchedCall{{CallID: call.CallID, Tool: call.Tool, Arguments: call.Arguments}}, Concurrency: 1}
		err = r.mustRecord(journal.ToolsDispatched, dc)
	}
	r.blockMu.Unlock()
	if err != nil {
		return builtins.Result{}, nil, err
	}
	out := tools.box.Dispatch(builtins.WithCallScope(ctx, r.id, r.iter), []policy.Approved{g.approved}, 1, r.agent.Loop.ToolTimeout.Std())[0]
	res = out.Result
	data := journal.ToolResultData{CallID: call.CallID, Tool: call.Tool, DurationMS: res.Elapsed.Milliseconds(), Truncated: res.Truncated}
	if out.Err != nil {
		data.Error, data.ErrorKind = out.Err.Error(), string(builtins.KindOf(out.Err))
	} else {
		data.Output = res.Content
	}
	if err := r.mustRecord(journal.ToolResult, data); err != nil {
		return builtins.Result{}, nil, err
	}
	if out.Err != nil {
		return builtins.Result{}, fmt.Errorf("%s: %w", name, out.Err), nil
	}
	return res, nil, nil
}

// selectorTools builds (once per engine) the toolbox of a best_of_n block's
// command selector: one command tool, named after the block, that only
// this block's runs call. It is offered to no model.
func (e *Engine) selectorTools(ctx context.Context, bon *plan.BestOfN) (*agentTools, error) {
	sel := bon.Selector
	return e.blockTools(ctx, bon.Address, "command selector", "picks one of the eligible candidates", selectorSchema,
		sel.Command, sel.Effect, sel.Timeout, plan.DefaultSelectorTimeout, bestofn.MaxChoiceBytes)
}

// scorerTools builds (once per engine) the toolbox of a best_of_n block's
// command scorer: one command tool, named after the block with ".scorer",
// that only this block's runs call. It is offered to no model.
func (e *Engine) scorerTools(ctx context.Context, bon *plan.BestOfN) (*agentTools, error) {
	sc := bon.Scorer
	return e.blockTools(ctx, bon.Address+scorerSuffix, "command scorer", "scores one candidate", scorerSchema,
		sc.Command, sc.Effect, sc.Timeout, plan.DefaultScorerTimeout, maxScorerOutput)
}

// blockTools builds (once per engine) the toolbox of one command a
// best_of_n block runs itself, as the tool name.
func (e *Engine) blockTools(ctx context.Context, name, what, does string, schema json.RawMessage, cmd *plan.CommandExec, effect string, timeout, defTimeout plan.Duration, maxOut int) (*agentTools, error) {
	e.toolMu.Lock()
	defer e.toolMu.Unlock()
	if t, ok := e.toolboxes[name]; ok {
		return t, nil
	}
	if cmd == nil || len(cmd.Argv) == 0 {
		return nil, fmt.Errorf("%s: the %s has no argv", name, what)
	}
	tool := plan.DefaultTool()
	tool.Address = "tool." + name
	tool.Description = "The " + what + " of " + strings.TrimSuffix(name, scorerSuffix) + ": " + does + "."
	tool.Parameters = schema
	tool.Executor = plan.Executor{Kind: "command", Command: cmd}
	if effect != "" {
		tool.Effect = effect
	}
	if timeout > 0 {
		tool.Timeout = timeout
	} else {
		tool.Timeout = defTimeout
	}
	tool.MaxOutputBytes = maxOut
	tool.OnResume = plan.DefaultOnResume(tool.Effect)
	opts := e.toolboxOptions(nil)
	box, err := builtins.NewToolbox(ctx, []plan.Tool{tool}, nil, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, what, err)
	}
	info, _ := box.Info(name)
	t := &agentTools{box: box, info: map[string]builtins.Info{name: info}}
	e.toolboxes[name] = t
	return t, nil
}
