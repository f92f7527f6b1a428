model "budget_not_below_max_tokens" {
  provider               = "anthropic"
  name                   = "claude-x"
  max_tokens             = 2000
  thinking               = "enabled"
  thinking_budget_tokens = 2000 # ERROR: Invalid value
}

model "enabled_without_budget" {
  provider = "anthropic"
  name     = "claude-x"
  thinking = "enabled" # ERROR: Missing thinking budget
}

model "budget_without_enabled" {
  provider               = "anthropic"
  name                   = "claude-x"
  thinking               = "adaptive"
  thinking_budget_tokens = 2048 # ERROR: Unexpected argument
}

model "anthropic_attribute_on_openai" {
  provider   = "openai"
  name       = "gpt-x"
  max_tokens = 100 # ERROR: Unexpected argument
}

model "unknown_cache" {
  provider     = "anthropic"
  name         = "claude-x"
  prompt_cache = "2h" # ERROR: Invalid value for prompt_cache
}

model "no_name" { # ERROR: Missing required argument
  provider = "anthropic"
}

model "negative_cache_price" {
  provider = "anthropic"
  name     = "claude-x"
  pricing {
    input_usd_per_mtok      = 3
    output_usd_per_mtok     = 15
    cache_read_usd_per_mtok = -1 # ERROR: Invalid value
  }
}
