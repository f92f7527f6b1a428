# Budgets at every level: the solver within its cost limit, the best-of-N
# block within its estimates, and a run stopped by a limit.

run "solver_within_budget" {
  agent = agent.solver
  input = "What is 6 * 7?"

  assert {
    condition     = run.answer == "42" && run.usage.model_calls == 1
    error_message = "One model call answers."
  }
  assert {
    condition     = run.usage.cost_usd > 0 && run.usage.cost_usd < 0.05
    error_message = "The call is priced, within the limit."
  }
}

run "judged_candidates" {
  best_of_n = best_of_n.answer
  input     = "What is 6 * 7?"

  assert {
    condition     = run.answer == "42" && run.usage.model_calls == 6
    error_message = "Three candidates and three judgements: six model calls, the budget's limit."
  }
}

run "stopped_by_the_model_call_limit" {
  best_of_n = best_of_n.answer
  input     = "What is 6 * 7?"
  budget {
    max_model_calls = 5
  }
  expect_failures = ["budget_exceeded"]

  assert {
    condition     = run.limit == "max_model_calls"
    error_message = "The estimates no longer fit the budget: ${run.error}"
  }
}
