model "a" {
  provider = "openai"
  name     = "a"
}

model "b" {
  provider = "openai"
  name     = "b"
}

router "r" {
  models = [model.a]
  prefer = model.b # ERROR: Preferred model not in the router
}
