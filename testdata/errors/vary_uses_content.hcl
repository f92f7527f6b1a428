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
    temperature = length(candidate.content) # ERROR: Invalid reference in a deferred expression
  }
  scorer {
    expr = 1
  }
}
