package policy

import (
	"strings"

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
