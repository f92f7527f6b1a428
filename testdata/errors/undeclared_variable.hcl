variable "question" {
  default = "x"
}
model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model       = model.m
  description = var.qestion # ERROR: Reference to undeclared input variable
}
