model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

best_of_n "n" {
  agent = agent.a
  scorer { # ERROR: Scorer needs exactly one method
    judge = agent.a
    expr  = 1
  }
}
