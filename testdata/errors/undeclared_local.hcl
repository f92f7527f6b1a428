locals {
  style = "brief"
}
model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model       = model.m
  description = local.stlye # ERROR: Reference to undeclared local value
}
