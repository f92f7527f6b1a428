model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
  loop { mode = "reflect_and_retry" }
  reflect {
    evaluator = agent.a # ERROR: Agent evaluates itself
  }
}
