model "m" {
  provider = "openai"
  name     = "x"
  quality  = 1.5 # ERROR: Invalid value
}
