model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model       = model.m
  description = uppr("x") # ERROR: Call to unknown function
}
