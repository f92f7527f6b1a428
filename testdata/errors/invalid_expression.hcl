model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model       = model.m
  description = "a" + # ERROR: Invalid expression
}
