model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "calculator" {
  description = "Arithmetic"
  builtin     = "calculator"
}

tool "clock" {
  description = "The time"
  builtin     = "clock"
}

policy "rules" {
  rules {
    allow = ["calc*"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator, tool.clock] # WARNING: Tool never allowed
  policies = [policy.rules]
}
