# Security: rules, OPA and Cedar decide together. A command with sudo is
# denied before it could run; the shell is overridden anyway, so the test
# cannot run one whatever the policies say.

run "denies_sudo" {
  input  = "Clean up the disk"
  script = "scripts/security_sudo.json"
  override_tool {
    target = tool.shell
    result = "(the test's stand-in: no command ran)"
  }

  assert {
    condition     = run.tool_calls[0].name == "shell" && run.tool_calls[0].decision == "deny" && run.tool_calls[0].result == ""
    error_message = "sudo is denied, and nothing runs."
  }
  assert {
    condition     = anytrue([for d in run.decisions : d.tool == "shell" && d.decision == "deny"])
    error_message = "A policy denies the call."
  }
}

run "computes" {
  input = "What is 6 * 7?"

  assert {
    condition     = run.answer == "6 × 7 is 42 (from the calculator)." && run.tool_calls[0].decision == "allow"
    error_message = "The calculator is allowed: ${run.answer}"
  }
}
