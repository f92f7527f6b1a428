# No budget is exceeded by more than the one call in flight. Every agent runs
# the same endless tool loop on the fake server (its URL arrives as
# var.base_url): each model turn asks for two calculator calls and reports
# 100 prompt tokens and up to 20 completion tokens (fewer when the request's
# max_tokens says so). Each agent has one tight limit; the e2e test reads the
# journal to check the limit held, within one call, and that the run stopped
# with exit 3 naming it.

variable "base_url" {
  type = string
}

model "priced" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  pricing {
    input_usd_per_mtok  = 1000 # $0.10 per 100 prompt tokens
    output_usd_per_mtok = 2000 # $0.04 per 20 completion tokens
  }
  timeouts {
    total = "15s"
  }
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

budget "model_calls" {
  max_model_calls = 3
}

budget "tool_calls" {
  max_tool_calls = 5
}

budget "total_tokens" {
  max_total_tokens = 500
}

budget "prompt_tokens" {
  max_prompt_tokens = 350
}

budget "completion_tokens" {
  max_completion_tokens = 50
}

budget "cost" {
  max_cost_usd = 0.5
}

# Tight enough that the first call, whose real prompt (100 tokens) is larger
# than its estimate, passes the limit while in flight.
budget "total_overshoot" {
  max_total_tokens = 80
}

budget "prompt_overshoot" {
  max_prompt_tokens = 60
}

budget "iterations" {
  max_iterations = 3
}

budget "tool_rounds" {
  max_tool_rounds = 2
}

agent "model_calls" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.model_calls
}

agent "tool_calls" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.tool_calls
}

agent "total_tokens" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.total_tokens
}

agent "prompt_tokens" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.prompt_tokens
}

agent "completion_tokens" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.completion_tokens
}

agent "cost" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.cost
}

agent "iterations" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.iterations
}

agent "tool_rounds" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.tool_rounds
}

agent "total_overshoot" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.total_overshoot
}

agent "prompt_overshoot" {
  model    = model.priced
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.prompt_overshoot
}
