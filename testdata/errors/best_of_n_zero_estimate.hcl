model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

# max_total_tokens keeps its default (100000), so the candidates' tokens
# must be estimated before they can be reserved.
budget "bon" {
  max_model_calls = 20
}

best_of_n "n" {
  agent      = agent.a
  candidates = 4 # ERROR: Best-of-N estimate missing
  budget     = budget.bon
  scorer {
    expr = 1
  }
}
