model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.n # ERROR: Reference to undeclared model
}
