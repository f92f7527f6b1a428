# Runs on Temporal (e2e/temporal_test.go): the fake OpenAI server's URL
# arrives as var.base_url. The calculator is allowed, write (which records
# its effect once per idempotency key) too, and approve_me needs a person;
# policy.rego decides all three, so a worker with another copy of it
# refuses the run.

variable "base_url" {
  type = string
}

model "fake" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  timeouts {
    total       = "60s"
    connect     = "2s"
    first_event = "30s"
    idle        = "30s"
  }
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

tool "write" {
  description = "Append a line to the ledger, once per idempotency key"
  parameters = {
    type       = "object"
    properties = { line = { type = "string" } }
    required   = ["line"]
  }
  command {
    argv = ["./write.sh"]
  }
  effect  = "write"
  timeout = "60s"
}

tool "approve_me" {
  description = "Does nothing, once a person allows it"
  builtin     = "calculator"
}

policy "gate" {
  opa {
    modules = ["policy.rego"]
    query   = "data.e2e.gate.decision"
  }
}

budget "run" {
  max_iterations = 6
  timeout        = "5m"
}

agent "assistant" {
  model    = model.fake
  tools    = [tool.calculator, tool.write, tool.approve_me]
  policies = [policy.gate]
  budget   = budget.run
}
