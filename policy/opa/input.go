package opa

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/symbi-dev/symbi/policy"
)

// inputValue builds the OPA input document directly as an AST value. Going
// through encoding/json would cost a marshal and an unmarshal per decision;
// this keeps the document identical to json.Marshal(in) (the fuzz target
// checks that) for the price of walking it once. Nil maps become empty
// objects, so `input.context` is always an object.
func inputValue(in policy.Input) (ast.Value, error) {
	action, err := actionValue(in.Action)
	if err != nil {
		return nil, fmt.Errorf("input.action: %w", err)
	}
	if err := policy.CheckInputNumbers(in); err != nil {
		return nil, err
	}
	agent := ast.NewObject(
		ast.Item(ast.InternedTerm("name"), ast.StringTerm(in.Agent.Name)),
		ast.Item(ast.InternedTerm("model"), ast.StringTerm(in.Agent.Model)),
		ast.Item(ast.InternedTerm("delegation_depth"), ast.IntNumberTerm(in.Agent.DelegationDepth)),
	)
	usage := usageValue(in.Run.Usage)
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
func actionValue(a policy.Action) (ast.Value, error) {
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

// usageValue is u as an object; CheckInputNumbers has refused a cost that is
// not finite.
func usageValue(u policy.Usage) ast.Value {
	return ast.NewObject(
		ast.Item(ast.InternedTerm("model_calls"), ast.InternedTerm(u.ModelCalls)),
		ast.Item(ast.InternedTerm("tool_calls"), ast.InternedTerm(u.ToolCalls)),
		ast.Item(ast.InternedTerm("prompt_tokens"), ast.InternedTerm(u.PromptTokens)),
		ast.Item(ast.InternedTerm("completion_tokens"), ast.InternedTerm(u.CompletionTokens)),
		ast.Item(ast.InternedTerm("total_tokens"), ast.InternedTerm(u.TotalTokens)),
		ast.Item(ast.InternedTerm("cost_usd"), ast.FloatNumberTerm(u.CostUSD)),
	)
}

// mapValue converts trusted Go values (from configuration, JSON or code) to
// an AST object; CheckInputNumbers has refused what JSON cannot hold.
func mapValue(m map[string]any) (ast.Value, error) {
	if m == nil {
		return ast.NewObject(), nil
	}
	return ast.InterfaceToValue(m)
}
