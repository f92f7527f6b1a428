model "fast" { # ERROR: Missing required argument
  provider = "openai"
  nmae     = "gpt-4o-mini" # ERROR: Unsupported argument
}
