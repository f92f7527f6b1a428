package symbitest

import (
	"encoding/json"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/stdlib"
)

// The run's result as assertions see it: `run`. Every attribute has a
// fixed type, so validate finds a misspelt attribute or a comparison of
// the wrong type before anything runs. JSON (a tool call's arguments, an
// event's data) is a string, for jsondecode.
var (
	UsageType = cty.Object(map[string]cty.Type{
		"model_calls": cty.Number, "tool_calls": cty.Number, "prompt_tokens": cty.Number,
		"completion_tokens": cty.Number, "total_tokens": cty.Number, "cost_usd": cty.Number,
	})
	ToolCallType = cty.Object(map[string]cty.Type{
		"id": cty.String, "name": cty.String, "arguments": cty.String, "decision": cty.String, "reason": cty.String,
		"result": cty.String, "error": cty.String, "agent": cty.String, "iteration": cty.Number,
	})
	DecisionType = cty.Object(map[string]cty.Type{
		"action": cty.String, "tool": cty.String, "target": cty.String, "decision": cty.String, "reason": cty.String,
		"policy": cty.String, "agent": cty.String, "iteration": cty.Number,
	})
	EventType = cty.Object(map[string]cty.Type{
		"seq": cty.Number, "event": cty.String, "run": cty.String, "agent": cty.String, "iteration": cty.Number, "data": cty.String,
	})
	RunType = cty.Object(map[string]cty.Type{
		"id": cty.String, "agent": cty.String, "status": cty.String, "limit": cty.String, "error": cty.String,
		"answer": cty.String, "iterations": cty.Number, "duration_ms": cty.Number, "usage": UsageType,
		"tool_calls": cty.List(ToolCallType), "decisions": cty.List(DecisionType), "journal": cty.List(EventType),
	})
)

// assertContext is the scope of an assert block: run, and the function
// library with file() relative to the test file.
func assertContext(run cty.Value, dir string) *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{"run": run},
		Functions: stdlib.Functions(stdlib.Options{BaseDir: dir}),
	}
}

// runValue is the run's result: the engine's Result and every journal
// event the run and the runs under it (delegations, evaluators) produced,
// in order.
func runValue(res *engine.Result, events []engine.Event) cty.Value {
	var calls []map[string]cty.Value
	callAt := map[string]int{} // run id + call id -> index in calls
	var decisions, journalEvs []cty.Value
	for _, ev := range events {
		journalEvs = append(journalEvs, cty.ObjectVal(map[string]cty.Value{
			"seq": cty.NumberIntVal(ev.Seq), "event": cty.StringVal(ev.Type), "run": cty.StringVal(ev.RunID),
			"agent": cty.StringVal(ev.Agent), "iteration": cty.NumberIntVal(int64(ev.Iteration)), "data": cty.StringVal(string(ev.Data)),
		}))
		switch ev.Type {
		case journal.PolicyEvaluated:
			var d journal.PolicyEvaluatedData
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			for _, g := range d.Decisions {
				a := g.Action
				decisions = append(decisions, cty.ObjectVal(map[string]cty.Value{
					"action": cty.StringVal(string(a.Type)), "tool": cty.StringVal(a.Tool), "target": cty.StringVal(a.Target),
					"decision": cty.StringVal(string(g.Decision.Outcome)), "reason": cty.StringVal(g.Decision.Reason),
					"policy": cty.StringVal(g.Decision.Policy), "agent": cty.StringVal(ev.Agent), "iteration": cty.NumberIntVal(int64(ev.Iteration)),
				}))
				if a.Type != policy.ToolCall {
					continue
				}
				args := string(a.Arguments)
				if args == "" {
					args = "{}"
				}
				callAt[ev.RunID+"\x00"+a.CallID] = len(calls)
				calls = append(calls, map[string]cty.Value{
					"id": cty.StringVal(a.CallID), "name": cty.StringVal(a.Tool), "arguments": cty.StringVal(args),
					"decision": cty.StringVal(string(g.Decision.Outcome)), "reason": cty.StringVal(g.Decision.Reason),
					"result": cty.StringVal(""), "error": cty.StringVal(""),
					"agent": cty.StringVal(ev.Agent), "iteration": cty.NumberIntVal(int64(ev.Iteration)),
				})
			}
		case journal.ToolResult:
			var d journal.ToolResultData
			if json.Unmarshal(ev.Data, &d) != nil {
				continue
			}
			if i, ok := callAt[ev.RunID+"\x00"+d.CallID]; ok {
				calls[i]["result"] = cty.StringVal(d.Output)
				calls[i]["error"] = cty.StringVal(d.Error)
			}
		}
	}
	callVals := make([]cty.Value, len(calls))
	for i, c := range calls {
		callVals[i] = cty.ObjectVal(c)
	}
	u := res.Usage
	errText := res.Termination.Detail
	if res.Termination.Reason == engine.Completed {
		errText = ""
	}
	return cty.ObjectVal(map[string]cty.Value{
		"id":          cty.StringVal(res.RunID),
		"agent":       cty.StringVal(res.Agent),
		"status":      cty.StringVal(string(res.Termination.Reason)),
		"limit":       cty.StringVal(res.Termination.Limit),
		"error":       cty.StringVal(errText),
		"answer":      cty.StringVal(res.Answer),
		"iterations":  cty.NumberIntVal(int64(res.Iterations)),
		"duration_ms": cty.NumberIntVal(res.Elapsed.Milliseconds()),
		"usage": cty.ObjectVal(map[string]cty.Value{
			"model_calls": cty.NumberIntVal(u.ModelCalls), "tool_calls": cty.NumberIntVal(u.ToolCalls),
			"prompt_tokens": cty.NumberIntVal(u.PromptTokens), "completion_tokens": cty.NumberIntVal(u.CompletionTokens),
			"total_tokens": cty.NumberIntVal(u.TotalTokens), "cost_usd": cty.NumberFloatVal(u.CostUSD),
		}),
		"tool_calls": listOf(ToolCallType, callVals),
		"decisions":  listOf(DecisionType, decisions),
		"journal":    listOf(EventType, journalEvs),
	})
}

func listOf(ty cty.Type, vals []cty.Value) cty.Value {
	if len(vals) == 0 {
		return cty.ListValEmpty(ty)
	}
	return cty.ListVal(vals)
}
