# Every fault the fake server can inject must end in a typed error or a
# recovery, through the whole CLI. Two agents on the same fake server (its URL
# arrives as var.base_url): one whose model streams, one whose model is called
# with plain requests (its capabilities leave out "streaming"). Short stream
# timeouts turn a stalled server into a timeout quickly; two attempts per call
# let one transient fault recover.

variable "base_url" {
  type = string
}

model "streamed" {
  provider     = "openai"
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
  provider     = "openai"
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

# No stream timeouts at all: only the budget's timeout can end a stalled call.
model "untimed" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
}

budget "two_seconds" {
  timeout = "2s"
}

agent "untimed" {
  model  = model.untimed
  budget = budget.two_seconds
  loop {
    mode = "simple"
  }
}
