# A best-of-N budget is the aggregate over all candidates. Four candidates,
# two at a time, on the fake server (var.base_url); the estimate (120 tokens a
# candidate) passes the compile-time preflight, but the server reports 300
# tokens a call, so the aggregate max_total_tokens runs out while candidates
# are in flight. The e2e test checks that the server saw no call the budget
# did not allow, and that the overshoot is at most the calls in flight.

variable "base_url" {
  type = string
}

model "remote" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["streaming"]
  timeouts {
    total = "15s"
  }
}

agent "solver" {
  model  = model.remote
  system = "Answer with the number only."
  loop {
    mode = "simple"
  }
}

budget "aggregate" {
  max_total_tokens = 480
  timeout          = "30s"
}

best_of_n "answer" {
  agent           = agent.solver
  candidates      = 4
  max_concurrency = 2
  timeout         = "30s"
  side_effects    = "isolate"
  budget          = budget.aggregate

  vary {
    temperature = 0.2 + 0.1 * candidate.index
  }

  estimate {
    model_calls_per_candidate  = 1
    total_tokens_per_candidate = 120
  }

  scorer {
    expr = can(regex("^[0-9]+$", trimspace(candidate.content))) ? 1 : 0
  }

  selector {
    kind = "highest_score"
  }
}
