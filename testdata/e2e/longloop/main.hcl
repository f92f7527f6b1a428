# A long tool loop through the whole CLI, as ../shared/peers measures symbi:
# the rules policy, the journal on with background sync, a tool call per
# round. One tool prints what a terminal must not interpret and a byte
# that is not UTF-8; another takes any arguments. The fake server's URL arrives as var.base_url.

variable "base_url" {
  type = string
}

model "m" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
}

tool "calculator" {
  description = "Evaluate arithmetic"
  builtin     = "calculator"
}

tool "noise" {
  description = "prints escape sequences and a byte that is not UTF-8"
  parameters  = { type = "object" }
  effect      = "read"
  command {
    argv = ["printf", "a\\033[2J\\377b <&> \\342\\200\\250"]
  }
}

tool "note" {
  description = "takes any object"
  parameters  = { type = "object" }
  effect      = "none"
  command {
    argv = ["echo", "noted"]
  }
}

policy "open" {
  rules {
    allow = ["*"]
  }
}

budget "loose" {
  max_iterations  = 1000
  max_model_calls = 1000
  max_tool_calls  = 1000
  max_tool_rounds = 1000
}

agent "a" {
  model    = model.m
  system   = "You are careful <&>."
  tools    = [tool.calculator, tool.noise, tool.note]
  policies = [policy.open]
  budget   = budget.loose
}
