# The quickstart: one agent on the offline scripted model, one tool, one
# policy. Run it with
#
#   go run ./cmd/symbi run examples/quickstart.hcl
#
# and watch the model call the calculator, the rules policy allow the call,
# the tool answer, and the model stream its final answer.

symbi {
  state_dir = ".symbi" # journals go to examples/.symbi/runs/<run-id>/
}

# Used when no input is given on the command line or standard input.
variable "input" {
  type    = string
  default = "What is 6 * 7?"
}

model "offline" {
  provider = "scripted"
  script   = "scripts/quickstart.json"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    deny  = ["calculator:expression=*/ 0*"] # no division by zero, as an example of a deny rule
    allow = ["calculator"]
  }
}

budget "quickstart" {
  max_iterations   = 5
  max_tool_calls   = 4
  max_total_tokens = 20000
  timeout          = "30s"
}

agent "assistant" {
  description = "Answers arithmetic questions with the calculator"
  model       = model.offline
  system      = "You are a careful assistant. Use the calculator for arithmetic, then answer in one sentence."
  tools       = [tool.calculator]
  policies    = [policy.rules]
  budget      = budget.quickstart

  loop {
    mode = "react"
  }
}
