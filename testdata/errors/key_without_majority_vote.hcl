model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

best_of_n "n" {
  agent = agent.a
  scorer {
    expr = 1
  }
  selector {
    kind = "highest_score"
    key  = candidate.content # ERROR: Key without majority vote
  }
}
