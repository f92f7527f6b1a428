model "m" {
  provider = "opanai" # ERROR: Invalid value for provider
  name     = "x"
}
