# Rego tests for the gate, run by `symbi policy test` (and `opa test`).
package symbi.gate_test

import data.symbi.gate

tool_call(tool, args) := {
	"action": {"type": "tool_call", "tool": tool, "arguments": args, "effect": "read"},
	"agent": {"name": "researcher", "model": "offline", "delegation_depth": 0},
	"run": {
		"id": "test", "iteration": 1,
		"usage": {"model_calls": 1, "tool_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 100, "cost_usd": 0.01},
		"budget": {"max_cost_usd": 0.5, "max_total_tokens": 100000},
	},
	"context": {},
}

test_allow_listed_command if {
	gate.decision.decision == "allow" with input as tool_call("shell", {"cmd": "ls -la"})
}

test_command_not_on_allow_list if {
	d := gate.decision with input as tool_call("shell", {"cmd": "curl http://example.com"})
	d.decision == "deny"
	contains(d.reason, "not on the allow-list")
}

test_metacharacters_denied if {
	gate.decision.decision == "deny" with input as tool_call("shell", {"cmd": "ls; rm -rf ~"})
}

test_git_write_denied if {
	gate.decision.decision == "deny" with input as tool_call("shell", {"cmd": "git push --force"})
}

test_git_read_allowed if {
	gate.decision.decision == "allow" with input as tool_call("shell", {"cmd": "git log -3"})
}

test_spend_limit if {
	d := gate.decision with input as tool_call("web_search", {"query": "x"})
		with input.run.usage.cost_usd as 0.45
	d.decision == "deny"
	startswith(d.reason, "spend limit")
}

test_token_limit if {
	d := gate.decision with input as tool_call("web_search", {"query": "x"})
		with input.run.usage.total_tokens as 95000
	startswith(d.reason, "token limit")
}

test_spend_limit_wins_over_allow_list if {
	gate.decision.decision == "deny" with input as tool_call("shell", {"cmd": "ls"})
		with input.run.usage.cost_usd as 0.49
}

test_destructive_asks if {
	d := gate.decision with input as tool_call("delete_file", {"path": "/tmp/x"})
		with input.action.effect as "destructive"
	d.decision == "ask"
}

test_search_capped if {
	d := gate.decision with input as tool_call("web_search", {"query": "x", "max_results": 50})
	d.decision == "modify"
	d.arguments == {"query": "x", "max_results": 10}
}

test_unaddressed_is_not_applicable if {
	gate.decision.decision == "not_applicable" with input as tool_call("read_file", {"path": "README.md"})
}
