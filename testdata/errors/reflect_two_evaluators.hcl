model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "critic" {
  model = model.m
}

agent "a" {
  model = model.m
  reflect { # ERROR: Reflect needs one evaluator
    evaluator = agent.critic
    rubric {
      criterion "accuracy" { weight = 1 }
    }
  }
}
