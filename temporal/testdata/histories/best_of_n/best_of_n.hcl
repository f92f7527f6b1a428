# Best-of-N by majority vote, offline. Five candidates answer the same
# question on the scripted model, two at a time; an expression scorer
# rejects any answer that is not a bare number; the most common remaining
# answer wins. Run it with
#
#   go run ./cmd/symbi run examples/best_of_n.hcl --best-of answer
#
# and watch the candidate_* events: four candidates are eligible, one is
# rejected, and "42" wins three votes to one.

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "What is 6 * 7? Answer with the number only."
}

model "offline" {
  provider = "scripted"
  script   = "scripts/bon_vote.json"
}

agent "solver" {
  description = "Answers with a number"
  model       = model.offline
  system      = "Answer with the number only."

  loop {
    mode = "simple"
  }
}

budget "bon" {
  max_model_calls  = 10
  max_total_tokens = 10000
  timeout          = "1m"
}

best_of_n "answer" {
  agent           = agent.solver
  candidates      = 5
  max_concurrency = 2
  timeout         = "30s"
  minimum_score   = 0.5
  side_effects    = "isolate"
  budget          = budget.bon

  vary {
    temperature = 0.2 + 0.15 * candidate.index
  }

  estimate {
    model_calls_per_candidate  = 1
    total_tokens_per_candidate = 200
  }

  scorer {
    # 1 for a bare number, 0 for anything else.
    expr = can(regex("^[0-9]+$", trimspace(candidate.content))) ? 1 : 0
  }

  selector {
    kind = "majority_vote"
    key  = lower(trimspace(candidate.content))
  }
}
