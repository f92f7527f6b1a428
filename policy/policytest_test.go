package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestRunTests(t *testing.T) {
	gate := opaPolicy("policy.rego", "data.g.decision",
		file("policies/g.rego", "package g\n\ndefault decision := false\n\ndecision if input.action.tool == \"web_search\"\n"),
		file("policies/g_test.rego", "package g_test\n\nimport data.g\n\ntest_search if g.decision with input as {\"action\": {\"tool\": \"web_search\"}}\n\ntest_shell if g.decision with input as {\"action\": {\"tool\": \"shell\"}}\n\ntodo_test_later if false\n"))
	broken := opaPolicy("policy.broken", "data.b.nothing", file("policies/b.rego", "package b\n\nx := 1\n"))
	p := testPlan(gate, broken, rulesPolicy("policy.rules", plan.RulesPolicy{Deny: []string{"shell:cmd=sudo*"}}))
	p.Agent("agent.researcher").Policies = []string{"policy.rules"}
	tests := []plan.PolicyTest{
		{Address: "policy_test.pass", Policy: "policy.rules", Action: json.RawMessage(`{"type":"tool_call","tool":"shell","arguments":{"cmd":"sudo ls"}}`), Expect: "deny", Reason: "sudo"},
		{Address: "policy_test.wrong_outcome", Policy: "policy.rules", Action: json.RawMessage(`{"type":"tool_call","tool":"shell","arguments":{"cmd":"ls"}}`), Expect: "deny"},
		{Address: "policy_test.wrong_reason", Policy: "policy.rules", Action: json.RawMessage(`{"type":"tool_call","tool":"shell","arguments":{"cmd":"sudo ls"}}`), Expect: "deny", Reason: "^root"},
		{Address: "policy_test.bad_action", Policy: "policy.rules", Action: json.RawMessage(`{"type":"fly"}`), Expect: "deny"},
		{Address: "policy_test.broken_policy", Policy: "policy.broken", Action: json.RawMessage(`{"tool":"x"}`), Expect: "deny"},
		{Address: "policy_test.opa", Policy: "policy.rego", Agent: "agent.critic", Action: json.RawMessage(`{"tool":"web_search"}`), Expect: "allow"},
	}
	p.PolicyTests = tests
	results := RunTests(context.Background(), p, t.TempDir())
	got := map[string]TestResult{}
	for _, r := range results {
		got[r.Name] = r
	}
	for _, want := range []struct {
		name    string
		passed  bool
		skipped bool
		message string
	}{
		{"policy_test.pass", true, false, "deny"},
		{"policy_test.wrong_outcome", false, false, "got not_applicable (no rule matches tool_call \"shell\"), want deny"},
		{"policy_test.wrong_reason", false, false, `want a reason matching "^root"`},
		{"policy_test.bad_action", false, false, `unknown type "fly"`},
		{"policy_test.broken_policy", false, false, "undefined query"},
		{"policy_test.opa", true, false, "allow"},
		{"policy.rego data.g_test.test_search", true, false, ""},
		{"policy.rego data.g_test.test_shell", false, false, "false or undefined"},
		{"policy.rego data.g_test.todo_test_later", false, true, ""},
		{"policy.broken", false, false, "undefined query"},
	} {
		r, ok := got[want.name]
		if !ok {
			t.Errorf("no result for %s (have %v)", want.name, results)
			continue
		}
		if r.Passed != want.passed || r.Skipped != want.skipped || !strings.Contains(r.Message, want.message) {
			t.Errorf("%s: passed %v skipped %v %q; want %v %v containing %q", want.name, r.Passed, r.Skipped, r.Message, want.passed, want.skipped, want.message)
		}
	}
	if len(results) != 10 {
		t.Errorf("%d results, want 10", len(results))
	}
}
