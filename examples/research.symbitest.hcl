# Research with routing: the router sends the question to the small model,
# which answers with the calculator.

run "routes_to_the_small_model" {
  assert {
    condition     = run.answer == "6 × 7 is 42 (from the calculator)."
    error_message = "The answer: ${run.answer}"
  }
  assert {
    condition     = alltrue([for e in run.journal : jsondecode(e.data).model == "model.small" if e.event == "model_routed"])
    error_message = "Every call goes to model.small."
  }
  assert {
    condition     = run.tool_calls[0].name == "calculator" && run.tool_calls[0].decision == "allow"
    error_message = "The calculator is allowed."
  }
}
