# The react mode: a router picks the model, the calculator is called, a
# second call is denied by the rules, and the model answers.

model "small" {
  provider       = "scripted"
  script         = "script.json"
  context_window = 32000
  quality        = 0.6
  latency        = 0.9
}

model "large" {
  provider       = "scripted"
  script         = "script.json"
  context_window = 128000
  quality        = 0.9
  latency        = 0.4
}

router "balanced" {
  strategy        = "balanced"
  models          = [model.small, model.large]
  prefer          = model.small
  require         = ["tools"]
  minimum_quality = 0.5
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    deny  = ["calculator:expression=*/ 0*"]
    allow = ["calculator"]
  }
}

budget "solver" {
  max_iterations   = 5
  max_tool_calls   = 4
  max_total_tokens = 20000
  timeout          = "30s"
}

agent "solver" {
  model    = router.balanced
  system   = "Use the calculator for arithmetic."
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.solver

  loop {
    mode = "react"
  }
}
