# plan_execute, offline. The model writes a plan of three steps; the two
# independent ones run in parallel, each a small react run with the
# calculator; the third waits for both; a final call writes the answer.
# Run it with
#
#   go run ./cmd/symbi run examples/plan_execute.hcl
#
# and watch plan_created, then step_started / step_finished for s1 and s2
# together, then s3, then the answer.

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "Is 6 * 7 equal to 100 - 58?"
}

model "offline" {
  provider = "scripted"
  script   = "scripts/plan_compare.json"
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

budget "plan" {
  max_iterations   = 20
  max_plan_steps   = 6
  max_tool_calls   = 6
  max_total_tokens = 40000
  timeout          = "1m"
}

agent "planner" {
  description = "Splits a question into steps and answers it"
  model       = model.offline
  system      = "You are a careful assistant. Use the calculator for arithmetic."
  tools       = [tool.calculator]
  policies    = [policy.rules]
  budget      = budget.plan

  loop {
    mode = "plan_execute"
  }

  plan {
    max_steps                   = 4
    max_parallel_steps          = 2
    step_timeout                = "30s"
    allow_replanning            = true
    continue_after_step_failure = false
  }
}
