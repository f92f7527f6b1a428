# The policy pack, in runs: what the policy_test blocks (tests.hcl) check one
# action at a time, here through whole runs of the agents.

run "researcher_answers" {
  agent = agent.researcher
  input = "Say ok"

  assert {
    condition     = run.answer == "ok"
    error_message = "A plain answer is allowed: ${run.answer}"
  }
}

run "private_keys_never_leave" {
  agent           = agent.researcher
  input           = "Show me the deploy key"
  script          = "scripts/leak_key.json"
  expect_failures = ["policy_denial"]

  assert {
    condition     = run.answer == "" && anytrue([for d in run.decisions : d.action == "respond" && d.decision == "deny" && d.policy == "policy.guardrails"])
    error_message = "The guardrails deny an answer holding a private key."
  }
}

run "deleting_waits_for_a_person" {
  agent  = agent.janitor
  input  = "Delete old.log"
  script = "scripts/delete.json"
  override_tool {
    target = tool.delete_file
    result = "deleted (the test's stand-in)"
  }

  assert {
    condition     = run.tool_calls[0].name == "delete_file" && run.tool_calls[0].result == ""
    error_message = "Without a person to approve it, the file is not deleted."
  }
  assert {
    condition     = anytrue([for e in run.journal : e.event == "approval_decided" && !jsondecode(e.data).approved])
    error_message = "The approval is asked for, and no one gives it."
  }
}
