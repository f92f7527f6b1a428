package policy_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// An agent's chain: built-in guardrails first, then on_no_policy for what
// they do not address.
func ExampleChain() {
	p := &plan.Plan{Policies: []plan.Policy{{
		Address: "policy.guardrails",
		Kind:    "rules",
		Rules:   &plan.RulesPolicy{Deny: []string{"shell:cmd=sudo*"}, Allow: []string{"shell", "read_*"}},
	}}}
	g, err := policy.FromPlan(context.Background(), p, "policy.guardrails", ".")
	if err != nil {
		fmt.Println(err)
		return
	}
	chain := policy.NewChain([]policy.Link{{Address: "policy.guardrails", Gate: g}}, "deny", nil)
	for _, a := range []policy.Action{
		{Type: policy.ToolCall, Tool: "shell", Arguments: json.RawMessage(`{"cmd":"sudo rm -rf /"}`)},
		{Type: policy.ToolCall, Tool: "read_file", Arguments: json.RawMessage(`{"path":"notes.md"}`)},
		{Type: policy.ToolCall, Tool: "web_search", Arguments: json.RawMessage(`{"query":"otters"}`)},
		{Type: policy.Respond, Content: "Otters eat sea urchins."},
	} {
		v := chain.Gate(context.Background(), policy.NewInput(p, "agent.researcher", a, nil))
		fmt.Printf("%s: %s (may run now: %v)\n", a, v.Decision.Outcome, v.Approved.Valid())
	}
	// Output:
	// tool_call "shell": deny (may run now: false)
	// tool_call "read_file": allow (may run now: true)
	// tool_call "web_search": deny (may run now: false)
	// respond: allow (may run now: true)
}
