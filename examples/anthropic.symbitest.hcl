# Claude through the Messages API, replayed from a cassette recorded from
# Anthropic's wire format (e2e's TestExampleCassettes records it again with
# -update): thinking, a tool call, and the answer. No key is needed.

run "thinks_then_computes" {
  input    = "What is 17 * 23?"
  cassette = "cassettes/anthropic.json"

  assert {
    condition     = strcontains(run.answer, "391")
    error_message = "The answer is 391: ${run.answer}"
  }
  assert {
    condition     = run.tool_calls[0].name == "calculator" && run.tool_calls[0].result == "391"
    error_message = "Claude asks the calculator."
  }
  assert {
    condition     = anytrue([for e in run.journal : try(jsondecode(e.data).reasoning, "") != "" if e.event == "reasoning_complete"])
    error_message = "Its thinking is journalled as reasoning."
  }
  assert {
    condition     = run.usage.cost_usd > 0 && run.usage.cost_usd < 0.5
    error_message = "The calls are priced, within the budget."
  }
}
