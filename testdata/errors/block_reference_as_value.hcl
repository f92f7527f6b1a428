model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model       = model.m
  description = model.m.provider # ERROR: Block reference not allowed here
}
