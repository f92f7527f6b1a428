# An agent whose calculator call needs a person (TestReplay's approval
# history).
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    ask = ["calculator"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
