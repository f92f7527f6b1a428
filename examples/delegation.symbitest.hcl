# Delegation: the lead hands the question to the researcher, whose answer a
# critic scores before it is returned.

run "delegates_and_reports" {
  agent = agent.lead
  input = "What is 6 * 7?"

  assert {
    condition     = run.answer == "The researcher says 6 × 7 is 42."
    error_message = "The lead reports the researcher's answer: ${run.answer}"
  }
  assert {
    condition     = anytrue([for d in run.decisions : d.action == "delegate" && d.target == "researcher" && d.decision == "allow"])
    error_message = "The team policy allows the delegation."
  }
  assert {
    condition     = anytrue([for c in run.tool_calls : c.agent == "agent.researcher" && c.name == "calculator" && c.result == "42"])
    error_message = "The researcher computes with the calculator."
  }
  assert {
    condition     = one([for e in run.journal : jsondecode(e.data).verdict if e.event == "reflection_evaluated"]) == "pass"
    error_message = "The critic passes the researcher's first answer."
  }
}
