model "m" {
  provider = "scripted"
  script   = "scripts/hello.json"
}

tool "calculator" {
  description = "Arithmetic"
  builtin     = "calculator"
}

policy "guard" {
  rules {
    deny = ["calc*"]
  }
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator] # WARNING: Tool always denied
  policies = [policy.guard, policy.rules]
}
