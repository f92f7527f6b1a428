model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = "m" # ERROR: Invalid reference
}
