model "a" {
  provider     = "openai"
  name         = "a"
  capabilities = ["streaming"]
}

router "r" {
  models  = [model.a]
  require = ["tools"] # ERROR: Router can choose no model
}
