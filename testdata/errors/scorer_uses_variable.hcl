variable "weight" {
  default = 2
}
model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

agent "a" {
  model = model.m
}

best_of_n "n" {
  agent = agent.a
  scorer {
    expr = var.weight * candidate.index # ERROR: Invalid reference in a deferred expression
  }
}
