package opa

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/plan"

	. "github.com/symbi-dev/symbi/policy"
)

// testPlan is a small configuration: two tools, two agents, and whatever
// policies a test adds. Files are inline FileRefs, so no disk is needed.
func testPlan(policies ...plan.Policy) *plan.Plan {
	p := &plan.Plan{
		Tools: []plan.Tool{
			{Address: "tool.shell", Effect: "destructive", Tags: []string{"exec"}, Approval: "policy"},
			{Address: "tool.web_search", Effect: "read", Tags: []string{"web"}, Idempotent: true, Approval: "never"},
			{Address: "tool.write_file", Effect: "write", Approval: "always"},
		},
		Agents: []plan.Agent{
			{Address: "agent.critic", Model: "model.fast"},
			{Address: "agent.researcher", Model: "model.fast", Tools: []string{"tool.shell", "tool.web_search", "tool.write_file"}},
		},
		Policies: policies,
	}
	p.Sort()
	return p
}

func file(path, text string) plan.FileRef { return plan.NewFileRef(path, []byte(text)) }

func opaPolicy(addr, query string, modules ...plan.FileRef) plan.Policy {
	return plan.Policy{Address: addr, Kind: "opa", OPA: &plan.OPAPolicy{Modules: modules, Query: query}}
}

func cedarPolicy(addr string, files ...plan.FileRef) plan.Policy {
	return plan.Policy{Address: addr, Kind: "cedar", Cedar: &plan.CedarPolicy{Policies: files}}
}

func rulesPolicy(addr string, r plan.RulesPolicy) plan.Policy {
	return plan.Policy{Address: addr, Kind: "rules", Rules: &r}
}

func mustGate(t testing.TB, p *plan.Plan, addr string) Gate {
	t.Helper()
	g, err := FromPlan(context.Background(), p, addr, t.TempDir())
	if err != nil {
		t.Fatalf("FromPlan(%s): %v", addr, err)
	}
	return g
}

func toolCall(tool string, args string) Action {
	return Action{Type: ToolCall, Tool: tool, CallID: "c1", Arguments: json.RawMessage(args)}
}

func input(p *plan.Plan, a Action) Input {
	return NewInput(p, "agent.researcher", a, map[string]any{"env": "test"})
}
