model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
  pricing {
    input_usd_per_mtok  = 1
    output_usd_per_mtok = 2
  }
}

agent "a" {
  model = model.m
}

agent "judge" {
  model = model.m
}

# The judge's cost is estimated apart from the generation's: 4 × ($0.10 +
# $0.20) is more than the $1 the budget allows.
budget "bon" {
  max_cost_usd     = 1
  max_total_tokens = 0
}

best_of_n "n" {
  agent      = agent.a
  candidates = 4 # ERROR: Best-of-N does not fit its budget
  budget     = budget.bon
  estimate {
    cost_usd_per_candidate        = 0.1
    scorer_cost_usd_per_candidate = 0.2
  }
  scorer {
    judge = agent.judge
  }
}
