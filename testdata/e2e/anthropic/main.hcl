# The faults fixture's agents on the anthropic provider: every fault the fake
# server can inject, in the Messages API's wire format, must end in a typed
# error or a recovery, through the whole CLI, as it does in the Chat
# Completions format. The fake server's root arrives as var.base_url.

variable "base_url" {
  type = string
}

model "streamed" {
  provider     = "anthropic"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  timeouts {
    total       = "15s"
    connect     = "2s"
    first_event = "500ms"
    idle        = "500ms"
  }
  retry {
    max_attempts = 2
    backoff      = "10ms"
    max_backoff  = "2s"
    jitter       = 0
  }
}

model "plain" {
  provider     = "anthropic"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools"]
  timeouts {
    total       = "15s"
    connect     = "2s"
    first_event = "500ms"
    idle        = "500ms"
  }
  retry {
    max_attempts = 2
    backoff      = "10ms"
    max_backoff  = "2s"
    jitter       = 0
  }
}

budget "bounded" {
  max_iterations = 3
  timeout        = "30s"
}

agent "streamed" {
  model  = model.streamed
  budget = budget.bounded
  loop {
    mode = "simple"
  }
}

agent "plain" {
  model  = model.plain
  budget = budget.bounded
  loop {
    mode = "simple"
  }
}

