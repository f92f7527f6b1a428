# A run killed with SIGKILL resumes from its journal to the answer an
# uninterrupted run gives. The scripted model takes 100 ms per turn and asks
# for the slow "step" tool three times (each call takes 250 ms), each turn
# chosen by the previous tool result, so a resumed run whose fresh model has
# played nothing still picks up at the right turn. The e2e test kills the
# process while the model thinks and while a tool runs.

variable "journal_sync" {
  type    = string
  default = "background"
}

symbi {
  journal_sync = var.journal_sync
}

model "stepper" {
  provider = "scripted"
  script   = "script.json"
}

tool "step" {
  description = "Takes a step: answers with the step it was given, slowly"
  parameters = {
    type       = "object"
    properties = { n = { type = "integer" } }
    required   = ["n"]
  }
  command {
    argv = ["sh", "-c", "sleep 0.25; cat"]
  }
  effect     = "read"
  idempotent = true
}

policy "rules" {
  rules {
    allow = ["step"]
  }
}

budget "steps" {
  max_iterations = 6
  timeout        = "60s"
}

agent "walker" {
  model    = model.stepper
  system   = "Take three steps, then report."
  tools    = [tool.step]
  policies = [policy.rules]
  budget   = budget.steps
}
