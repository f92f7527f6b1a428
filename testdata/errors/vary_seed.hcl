model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

best_of_n "n" {
  agent = agent.a
  vary {
    seed = candidate.index # ERROR: Unknown request field
  }
  scorer {
    expr = 1
  }
}
