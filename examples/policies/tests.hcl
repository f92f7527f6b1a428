# policy_test blocks: one action, one policy, the decision expected and,
# optionally, a regular expression the reason must match. Run them, with the
# Rego test_ rules in policies/gate_test.rego, by
#
#   symbi policy test examples/policies

# --- built-in rules ---------------------------------------------------------

policy_test "no_sudo" {
  policy = policy.guardrails
  agent  = agent.researcher
  action = { type = "tool_call", tool = "shell", arguments = { cmd = "sudo rm -rf /" } }
  expect = "deny"
  reason = "sudo"
}

policy_test "no_etc_writes" {
  policy = policy.guardrails
  agent  = agent.writer
  action = { type = "tool_call", tool = "write_file", arguments = { path = "/etc/passwd", content = "x" } }
  expect = "deny"
}

policy_test "no_private_keys_in_answers" {
  policy = policy.guardrails
  action = { type = "respond", content = "-----BEGIN PRIVATE KEY-----" }
  expect = "deny"
}

policy_test "guardrails_leave_the_rest_to_others" {
  policy = policy.guardrails
  action = { type = "tool_call", tool = "web_search", arguments = { query = "otters" } }
  expect = "not_applicable"
}

# --- OPA --------------------------------------------------------------------

policy_test "allow_listed_command" {
  policy = policy.gate
  action = { type = "tool_call", tool = "shell", arguments = { cmd = "git status" } }
  expect = "allow"
}

policy_test "command_not_on_allow_list" {
  policy = policy.gate
  action = { type = "tool_call", tool = "shell", arguments = { cmd = "curl http://example.com" } }
  expect = "deny"
  reason = "not on the allow-list"
}

policy_test "git_push_denied" {
  policy = policy.gate
  action = { type = "tool_call", tool = "shell", arguments = { cmd = "git push --force" } }
  expect = "deny"
  reason = "read-only subcommands"
}

policy_test "destructive_asks_a_person" {
  policy = policy.gate
  agent  = agent.janitor
  action = { type = "tool_call", tool = "delete_file", arguments = { path = "/tmp/old.log" } }
  expect = "ask"
  reason = "destructive"
}

policy_test "search_results_capped" {
  policy = policy.gate
  action = { type = "tool_call", tool = "web_search", arguments = { query = "otters", max_results = 100 } }
  expect = "modify"
  reason = "max_results capped at 10"
}

# --- Cedar ------------------------------------------------------------------

policy_test "researcher_may_search" {
  policy = policy.grants
  agent  = agent.researcher
  action = { type = "tool_call", tool = "web_search", arguments = { query = "otters" } }
  expect = "allow"
}

policy_test "writer_may_not_run_commands" {
  policy = policy.grants
  agent  = agent.writer
  action = { type = "tool_call", tool = "shell", arguments = { cmd = "ls" } }
  expect = "deny"
  reason = "Cedar denies by default"
}

policy_test "only_ops_deletes" {
  policy = policy.grants
  agent  = agent.researcher
  action = { type = "tool_call", tool = "delete_file", arguments = { path = "/tmp/x" } }
  expect = "deny"
  reason = "only the ops team"
}

policy_test "janitor_may_delete" {
  policy = policy.grants
  agent  = agent.janitor
  action = { type = "tool_call", tool = "delete_file", arguments = { path = "/tmp/x" } }
  expect = "allow"
}

policy_test "nobody_touches_etc" {
  policy = policy.grants
  agent  = agent.writer
  action = { type = "tool_call", tool = "write_file", arguments = { path = "/etc/hosts" } }
  expect = "deny"
  reason = "nothing under /etc"
}

policy_test "researcher_delegates_to_critic" {
  policy = policy.grants
  agent  = agent.researcher
  action = { type = "delegate", target = "critic", task = "check the answer" }
  expect = "allow"
}

policy_test "critic_uses_no_tools" {
  policy = policy.grants
  agent  = agent.critic
  action = { type = "tool_call", tool = "read_file", arguments = { path = "README.md" } }
  expect = "deny"
}
