package opa

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"

	. "github.com/symbi-dev/symbi/policy"
)

func TestRunTests(t *testing.T) {
	gate := opaPolicy("policy.rego", "data.g.decision",
		file("policies/g.rego", "package g\n\ndefault decision := false\n\ndecision if input.action.tool == \"web_search\"\n"),
		file("policies/g_test.rego", "package g_test\n\nimport data.g\n\ntest_search if g.decision with input as {\"action\": {\"tool\": \"web_search\"}}\n\ntest_shell if g.decision with input as {\"action\": {\"tool\": \"shell\"}}\n\ntodo_test_later if false\n\ntest_raises if to_number(\"abc\") == 1\n"))
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
	const pass, fail, errored, skip = "pass", "fail", "error", "skip"
	for _, want := range []struct {
		name    string
		status  string
		message string
	}{
		{"policy_test.pass", pass, "deny"},
		{"policy_test.wrong_outcome", fail, "got not_applicable (no rule matches tool_call \"shell\"), want deny"},
		{"policy_test.wrong_reason", fail, `want a reason matching "^root"`},
		{"policy_test.bad_action", errored, `unknown type "fly"`},
		{"policy_test.broken_policy", errored, "undefined query"},
		{"policy_test.opa", pass, "allow"},
		{"policy.rego data.g_test.test_search", pass, ""},
		{"policy.rego data.g_test.test_shell", fail, "false or undefined"},
		{"policy.rego data.g_test.todo_test_later", skip, ""},
		{"policy.rego data.g_test.test_raises", errored, "to_number"},
		{"policy.broken", errored, "undefined query"},
	} {
		r, ok := got[want.name]
		if !ok {
			t.Errorf("no result for %s (have %v)", want.name, results)
			continue
		}
		status := fail
		switch {
		case r.Passed:
			status = pass
		case r.Errored:
			status = errored
		case r.Skipped:
			status = skip
		}
		if n := btoi(r.Passed) + btoi(r.Errored) + btoi(r.Skipped); n > 1 {
			t.Errorf("%s: passed %v, errored %v, skipped %v: a result is one of them", want.name, r.Passed, r.Errored, r.Skipped)
		}
		if status != want.status || !strings.Contains(r.Message, want.message) {
			t.Errorf("%s: %s %q; want %s containing %q", want.name, status, r.Message, want.status, want.message)
		}
	}
	if len(results) != 11 {
		t.Errorf("%d results, want 11", len(results))
	}
	// Counted as opa test counts them: an error is not a failure, and a
	// skipped test is reported, not dropped.
	c := CountTests(results)
	if want := (TestCounts{Passed: 3, Failed: 3, Errors: 4, Skipped: 1}); c != want {
		t.Errorf("CountTests = %+v, want %+v", c, want)
	}
	if got, want := c.String(), "3 passed, 3 failed, 4 errors, 1 skipped"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if c.OK() {
		t.Error("OK() with failures and errors")
	}
}

func TestCountsSummary(t *testing.T) {
	for _, tc := range []struct {
		c    TestCounts
		want string
		ok   bool
	}{
		{TestCounts{Passed: 2}, "2 passed, 0 failed, 0 errors, 0 skipped", true},
		{TestCounts{Passed: 2, Skipped: 1}, "2 passed, 0 failed, 0 errors, 1 skipped", true},
		{TestCounts{Errors: 1}, "0 passed, 0 failed, 1 error, 0 skipped", false},
		{TestCounts{Failed: 1}, "0 passed, 1 failed, 0 errors, 0 skipped", false},
	} {
		if got := tc.c.String(); got != tc.want || tc.c.OK() != tc.ok {
			t.Errorf("%+v: %q ok %v, want %q ok %v", tc.c, got, tc.c.OK(), tc.want, tc.ok)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
