# A run killed with SIGKILL resumes from its journal to the answer an
# uninterrupted run gives. The model is the e2e test's fake server
# (var.base_url), which asks for the "step" tool three times, each turn
# chosen by the previous tool result, so a resumed run whose fresh model has
# answered nothing still picks up at the right turn. The test holds the run
# where it kills it: the server stalls the model call it is to be killed in,
# and a step waits until the file var.gate/N exists (no gate: no wait).

variable "journal_sync" {
  type    = string
  default = "background"
}

variable "base_url" {
  type = string
}

variable "gate" {
  type    = string
  default = ""
}

symbi {
  journal_sync = var.journal_sync
}

model "stepper" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["streaming", "tools"]
}

tool "step" {
  description = "Takes a step: answers with the step it was given, once its gate is open"
  parameters = {
    type       = "object"
    properties = { n = { type = "integer" } }
    required   = ["n"]
  }
  command {
    argv = ["sh", "-c", "in=$(cat); g='${var.gate}'; case \"$in\" in *'\"n\":1'*) k=1;; *'\"n\":2'*) k=2;; *) k=3;; esac; while [ -n \"$g\" ] && [ ! -e \"$g/$k\" ]; do sleep 0.01; done; printf '%s' \"$in\""]
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
  timeout        = "10m"
}

agent "walker" {
  model    = model.stepper
  system   = "Take three steps, then report."
  tools    = [tool.step]
  policies = [policy.rules]
  budget   = budget.steps
}
