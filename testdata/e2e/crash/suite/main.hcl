# The crash suite (e2e/crash_test.go). The model is the test's fake
# OpenAI-compatible server at var.base_url: each turn asks for the next of six
# appends (and, every other turn, a calculator call beside it), with random
# latencies. "append" is the crashtool helper (testdata/e2e/crash/tool): it
# waits a random moment, appends "<idempotency key> <n>" to var.log with one
# write, waits again, and answers. Runs are killed with SIGKILL at random
# points, resumed, and killed again; the test then compares the log with the
# journal.

variable "base_url" {
  type = string
}

variable "tool" {
  type = string
}

variable "log" {
  type = string
}

variable "pids" {
  type = string
}

model "remote" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  timeouts {
    total = "30s"
  }
}

tool "append" {
  description = "Appends step n to the log"
  parameters = {
    type       = "object"
    properties = { n = { type = "integer" }, before_ms = { type = "integer" }, after_ms = { type = "integer" } }
    required   = ["n"]
  }
  command {
    argv = [var.tool, "append", var.log, var.pids]
  }
  effect = "write"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["append", "calculator"]
  }
}

agent "stepper" {
  model    = model.remote
  tools    = [tool.append, tool.calculator]
  policies = [policy.rules]
}
