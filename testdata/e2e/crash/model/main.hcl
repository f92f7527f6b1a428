# A model call in flight when symbi dies is charged on resume. The model is
# the e2e test's fake OpenAI-compatible server at var.base_url, which holds
# the second request until the test has killed symbi.

variable "base_url" {
  type = string
}

model "remote" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  timeouts {
    total = "60s"
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

agent "asker" {
  model    = model.remote
  tools    = [tool.calculator]
  policies = [policy.rules]
}
