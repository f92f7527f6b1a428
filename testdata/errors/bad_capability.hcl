model "m" {
  provider     = "openai"
  name         = "x"
  capabilities = ["tools", "vision"] # ERROR: Invalid value for capabilities
}
