model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

budget "bon" {
  max_total_tokens = 10000
}

best_of_n "n" {
  agent      = agent.a
  candidates = 4 # ERROR: Best-of-N does not fit its budget
  budget     = budget.bon
  estimate {
    total_tokens_per_candidate        = 3000
    scorer_total_tokens_per_candidate = 800
  }
  scorer {
    expr = 1
  }
}
