# The end-to-end telemetry fixture: one react run on the scripted model
# with two tool calls that the policy allows and one it denies, then an
# answer. e2e/telemetry_test.go and e2e/decisionlog_test.go run it.

model "offline" {
  provider = "scripted"
  script   = "scripts/turns.json"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

# Prints the trace context symbi gives a command tool.
tool "trace_context" {
  description = "Show the trace context"
  effect      = "read"
  parameters  = { type = "object", properties = {} }
  command {
    argv = ["sh", "-c", "printf '%s' \"$TRACEPARENT\""]
  }
}

policy "rules" {
  rules {
    deny  = ["calculator:expression=*/ 0*"]
    allow = ["calculator", "trace_context"]
  }
}

agent "assistant" {
  model    = model.offline
  tools    = [tool.calculator, tool.trace_context]
  policies = [policy.rules]
}
