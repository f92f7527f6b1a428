model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model  = model.m
  system = file("prompts/nope.md") # ERROR: Error in function call
}
