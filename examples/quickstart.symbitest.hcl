# The quickstart's tests: symbi test examples/quickstart.symbitest.hcl
# (docs/testing.md). The agent runs on its own scripted model, offline.

run "multiplies" {
  input = "What is 6 * 7?"

  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The answer names the product: ${run.answer}"
  }
  assert {
    condition     = length(run.tool_calls) == 1 && run.tool_calls[0].name == "calculator" && run.tool_calls[0].result == "42"
    error_message = "One calculator call, which answers 42."
  }
  assert {
    condition     = jsondecode(run.tool_calls[0].arguments).expression == "6 * 7"
    error_message = "The calculator is asked for 6 * 7."
  }
  assert {
    condition     = run.iterations == 2 && run.usage.model_calls == 2 && run.usage.total_tokens < 200
    error_message = "Two iterations, two model calls, a few tokens."
  }
}

run "denies_division_by_zero" {
  input  = "What is 1 / 0?"
  script = "scripts/quickstart_divide.json"

  assert {
    condition     = run.tool_calls[0].decision == "deny" && run.tool_calls[0].result == ""
    error_message = "The rules policy denies dividing by zero, so the calculator never runs."
  }
  assert {
    condition     = strcontains(run.answer, "cannot divide")
    error_message = "The model is told, and says so: ${run.answer}"
  }
}
