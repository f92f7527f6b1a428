model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

best_of_n "n" { # ERROR: Missing scorer block
  agent = agent.a
}
