# A hostile model (issue #11, item 8): the fake server at var.base_url streams
# content without end, or sends 80 MB of tool-call arguments. Each agent must be
# stopped while the call is in flight, by its token budget or by the model's
# max_response_bytes (the default, 8 MiB), never by the timeout. The models'
# own total timeout is long and every budget's timeout is 20 s, so that a call
# that nothing stops ends there, clearly, rather than at five minutes.

variable "base_url" {
  type = string
}

model "streamed" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  timeouts {
    total = "10m"
  }
}

model "plain" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools"]
  timeouts {
    total = "10m"
  }
}

tool "calculator" {
  description = "arithmetic"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

# The default budget (max_total_tokens 100000) but for its timeout.
budget "defaults" {
  timeout = "20s"
}

budget "total_tokens" {
  max_total_tokens = 20000
  timeout          = "20s"
}

# No token limit that 80 MB could reach first: only the byte cap is left.
budget "no_tokens" {
  max_total_tokens = 0
  timeout          = "20s"
}

# The default loop: max_output_tokens 4096 caps the call.
agent "output_cap" {
  model    = model.streamed
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.defaults
  loop {
    mode = "react"
  }
}

# A call allowed far more than the run's budget holds.
agent "total_cap" {
  model    = model.streamed
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.total_tokens
  loop {
    mode              = "react"
    max_output_tokens = 1000000
  }
}

agent "arguments" {
  model    = model.streamed
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.no_tokens
  loop {
    mode              = "react"
    max_output_tokens = 100000000
  }
}

agent "arguments_plain" {
  model    = model.plain
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.no_tokens
  loop {
    mode              = "react"
    max_output_tokens = 100000000
  }
}
