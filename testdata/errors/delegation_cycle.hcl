model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model     = model.m
  delegates = [agent.b] # ERROR: Delegation cycle
  loop { on_no_policy = "allow" }
}

agent "b" {
  model     = model.m
  delegates = [agent.a]
  loop { on_no_policy = "allow" }
}
