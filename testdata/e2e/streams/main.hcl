# Streams as real OpenAI-compatible servers send them, through the whole
# CLI: errors after a 200, [DONE] without a finish reason, reasoning apart
# from the answer. The fake server's URL arrives as var.base_url; three
# attempts per call, as the issue that found these saw retried.

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
    first_event = "2s"
    idle        = "2s"
  }
  retry {
    max_attempts = 3
    backoff      = "10ms"
    max_backoff  = "1s"
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
