# Budgets at every level: a per-agent budget with a cost limit (every
# reachable model must be priced, or compile fails), and a best-of-N budget
# that the estimates must fit before any candidate starts:
# 3 candidates × (1 + 1 model calls) = 6 ≤ 6, 3 × (2000 + 500) tokens = 7500 ≤ 8000.
#
#   symbi run examples/budgets.hcl --best-of answer "What is 6 * 7?"

variable "max_cost" {
  type    = number
  default = 0.05
}

model "priced" {
  provider = "scripted"
  script   = "scripts/ex_answer.json"
  pricing {
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.60
  }
}

model "judge" {
  provider = "scripted"
  script   = "scripts/ex_judge.json"
  pricing {
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.60
  }
}

budget "tight" {
  max_iterations                   = 4
  max_model_calls                  = 4
  max_tool_calls                   = 0
  max_prompt_tokens                = 8000
  max_completion_tokens            = 2000
  max_total_tokens                 = 10000
  max_cost_usd                     = var.max_cost
  timeout                          = "30s"
  estimated_output_tokens_per_call = 256
}

budget "bon" {
  max_model_calls  = 6
  max_total_tokens = 8000
  max_cost_usd     = 0.05
}

agent "solver" {
  model  = model.priced
  budget = budget.tight
  loop {
    profile           = "simple_answer"
    max_output_tokens = 256
  }
}

agent "judge" {
  model = model.judge
  loop {
    mode = "simple"
  }
}

best_of_n "answer" {
  agent           = agent.solver
  candidates      = 3
  max_concurrency = 3
  timeout         = "30s"
  side_effects    = "isolate"
  budget          = budget.bon

  vary {
    temperature = 0.2 + 0.2 * candidate.index
  }
  estimate {
    model_calls_per_candidate         = 1
    total_tokens_per_candidate        = 2000
    cost_usd_per_candidate            = 0.001
    scorer_model_calls_per_candidate  = 1
    scorer_total_tokens_per_candidate = 500
  }
  scorer {
    judge = agent.judge
  }
  selector {
    kind = "highest_score"
  }
}
