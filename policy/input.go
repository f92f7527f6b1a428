package policy

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/symbi-dev/symbi/plan"
)

// NewInput builds the input document for an action of the agent at
// agentAddr: the tool's effect and tags come from the plan (never from the
// model; an effect in a is kept only when stricter than the plan's, as a
// toolbox that knows an MCP tool's annotations gives), the run's budget from the agent's budget. The engine sets Run.ID,
// Run.Iteration, Run.Usage and Agent.DelegationDepth as the run goes; context
// holds trusted values from the configuration or the command line.
func NewInput(p *plan.Plan, agentAddr string, a Action, context map[string]any) Input {
	in := Input{Action: a, Context: context}
	if in.Context == nil {
		in.Context = map[string]any{}
	}
	in.Agent.Name = strings.TrimPrefix(agentAddr, "agent.")
	var budget plan.Budget = plan.DefaultBudget()
	if p != nil {
		if ag := p.Agent("agent." + in.Agent.Name); ag != nil {
			in.Agent.Model = addressName(ag.Model)
			budget = p.Budget(ag.Budget)
		}
		if a.Type == ToolCall {
			if t := p.Tool("tool." + a.Tool); t != nil {
				// The action may know the tool stricter than the plan (an
				// MCP tool's annotations); never looser.
				in.Action.Effect = plan.StricterEffect(t.Effect, a.Effect)
				in.Action.Tags = t.Tags
			}
		}
	}
	in.Run.Budget = BudgetLimits(budget)
	return in
}

// addressName is the name part of an address: "model.fast" -> "fast".
func addressName(addr string) string {
	if i := strings.IndexByte(addr, '.'); i >= 0 {
		return addr[i+1:]
	}
	return addr
}

// BudgetLimits lists a budget's set limits by field name, the form
// input.run.budget takes. Unset (zero) limits are left out, so a policy can
// test `input.run.budget.max_cost_usd` for presence.
func BudgetLimits(b plan.Budget) map[string]any {
	m := map[string]any{}
	put := func(name string, v int64) {
		if v != 0 {
			m[name] = v
		}
	}
	put("max_iterations", b.MaxIterations)
	put("max_model_calls", b.MaxModelCalls)
	put("max_tool_calls", b.MaxToolCalls)
	put("max_tool_rounds", b.MaxToolRounds)
	put("max_reflection_attempts", b.MaxReflectionAttempts)
	put("max_plan_steps", b.MaxPlanSteps)
	put("max_prompt_tokens", b.MaxPromptTokens)
	put("max_completion_tokens", b.MaxCompletionTokens)
	put("max_total_tokens", b.MaxTotalTokens)
	if b.MaxCostUSD != 0 {
		m["max_cost_usd"] = b.MaxCostUSD
	}
	if b.Timeout != 0 {
		m["timeout"] = b.Timeout.String()
	}
	return m
}

// inputValue builds the OPA input document directly as an AST value. Going
// through encoding/json would cost a marshal and an unmarshal per decision;
// this keeps the document identical to json.Marshal(in) (the fuzz target
// checks that) for the price of walking it once. Nil maps become empty
// objects, so `input.context` is always an object.
func inputValue(in Input) (ast.Value, error) {
	action, err := actionValue(in.Action)
	if err != nil {
		return nil, fmt.Errorf("input.action: %w", err)
	}
	agent := ast.NewObject(
		ast.Item(ast.InternedTerm("name"), ast.StringTerm(in.Agent.Name)),
		ast.Item(ast.InternedTerm("model"), ast.StringTerm(in.Agent.Model)),
		ast.Item(ast.InternedTerm("delegation_depth"), ast.IntNumberTerm(in.Agent.DelegationDepth)),
	)
	usage, err := usageValue(in.Run.Usage)
	if err != nil {
		return nil, fmt.Errorf("input.run.usage: %w", err)
	}
	budget, err := mapValue(in.Run.Budget)
	if err != nil {
		return nil, fmt.Errorf("input.run.budget: %w", err)
	}
	run := ast.NewObject(
		ast.Item(ast.InternedTerm("id"), ast.StringTerm(in.Run.ID)),
		ast.Item(ast.InternedTerm("iteration"), ast.IntNumberTerm(in.Run.Iteration)),
		ast.Item(ast.InternedTerm("usage"), ast.NewTerm(usage)),
		ast.Item(ast.InternedTerm("budget"), ast.NewTerm(budget)),
	)
	context, err := mapValue(in.Context)
	if err != nil {
		return nil, fmt.Errorf("input.context: %w", err)
	}
	return ast.NewObject(
		ast.Item(ast.InternedTerm("action"), ast.NewTerm(action)),
		ast.Item(ast.InternedTerm("agent"), ast.NewTerm(agent)),
		ast.Item(ast.InternedTerm("run"), ast.NewTerm(run)),
		ast.Item(ast.InternedTerm("context"), ast.NewTerm(context)),
	), nil
}

// actionValue mirrors Action's JSON form, omitempty included. The members
// are collected first and the object built once: inserting into an AST
// object one by one re-sorts its keys each time.
func actionValue(a Action) (ast.Value, error) {
	items := make([][2]*ast.Term, 0, 10)
	items = append(items, ast.Item(ast.InternedTerm("type"), ast.StringTerm(string(a.Type))))
	str := func(key, v string) {
		if v != "" {
			items = append(items, ast.Item(ast.InternedTerm(key), ast.StringTerm(v)))
		}
	}
	str("tool", a.Tool)
	str("call_id", a.CallID)
	if len(a.Arguments) > 0 {
		v, err := decodeJSON(a.Arguments)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		av, err := ast.InterfaceToValue(v)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		items = append(items, ast.Item(ast.InternedTerm("arguments"), ast.NewTerm(av)))
	}
	str("effect", a.Effect)
	if len(a.Tags) > 0 {
		tags := make([]*ast.Term, len(a.Tags))
		for i, t := range a.Tags {
			tags[i] = ast.StringTerm(t)
		}
		items = append(items, ast.Item(ast.InternedTerm("tags"), ast.ArrayTerm(tags...)))
	}
	str("target", a.Target)
	str("task", a.Task)
	str("content", a.Content)
	str("reason", a.Reason)
	return ast.NewObject(items...), nil
}

func usageValue(u Usage) (ast.Value, error) {
	if math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return nil, errors.New("cost_usd is not a finite number")
	}
	return ast.NewObject(
		ast.Item(ast.InternedTerm("model_calls"), ast.InternedTerm(u.ModelCalls)),
		ast.Item(ast.InternedTerm("tool_calls"), ast.InternedTerm(u.ToolCalls)),
		ast.Item(ast.InternedTerm("prompt_tokens"), ast.InternedTerm(u.PromptTokens)),
		ast.Item(ast.InternedTerm("completion_tokens"), ast.InternedTerm(u.CompletionTokens)),
		ast.Item(ast.InternedTerm("total_tokens"), ast.InternedTerm(u.TotalTokens)),
		ast.Item(ast.InternedTerm("cost_usd"), ast.FloatNumberTerm(u.CostUSD)),
	), nil
}

// mapValue converts trusted Go values (from configuration, JSON or code) to
// an AST object, refusing what JSON cannot hold.
func mapValue(m map[string]any) (ast.Value, error) {
	if m == nil {
		return ast.NewObject(), nil
	}
	if err := checkFinite(m); err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(m)
}

// checkFinite finds NaN and infinities, which have no JSON form.
func checkFinite(v any) error {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("a number is not finite")
		}
	case float32:
		return checkFinite(float64(v))
	case map[string]any:
		for _, e := range v {
			if err := checkFinite(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkFinite(e); err != nil {
				return err
			}
		}
	}
	return nil
}
