# Secrets must never reach a plan, a journal, a log or the terminal.
#
# The model is an openai model served by the e2e test's fake server (its URL
# arrives as var.base_url); its key is read from SYMBI_E2E_KEY. Both tools get
# a token from SYMBI_E2E_TOKEN at call time: the command tool in its
# environment, the http tool in a header. The tools and the fake model echo
# what they were given back, so every path a secret could leak by is
# exercised, and the test can tell that each secret really was delivered.

variable "base_url" {
  type        = string
  description = "the fake server's /v1 URL"
}

variable "lookup_url" {
  type        = string
  description = "the test's directory server"
}

variable "proof_dir" {
  type        = string
  description = "where the command tool writes the token it received"
}

# Given as SYMBI_VAR_pin; used nowhere, since a sensitive value may not
# enter the plan (testdata/e2e/sensitive_var tries), but the plan lists it.
variable "pin" {
  type        = string
  sensitive   = true
  default     = "0000"
  description = "a sensitive variable"
}

model "remote" {
  provider    = "openai"
  name        = "e2e-model"
  base_url    = var.base_url
  api_key_env = "SYMBI_E2E_KEY"
  timeouts {
    total       = "20s"
    first_event = "5s"
    idle        = "5s"
  }
}

tool "show_token" {
  description = "Reports the token the tool was given"
  parameters = {
    type       = "object"
    properties = { note = { type = "string" } }
  }
  command {
    argv = ["sh", "show_token.sh"]
    env = {
      TOKEN     = env("SYMBI_E2E_TOKEN")
      PROOF_DIR = var.proof_dir
    }
  }
  effect = "read"
}

tool "lookup" {
  description = "Looks a name up in the directory"
  parameters = {
    type       = "object"
    properties = { name = { type = "string" } }
    required   = ["name"]
  }
  http {
    url    = var.lookup_url
    method = "POST"
    headers = {
      Authorization = "Bearer ${env("SYMBI_E2E_TOKEN")}"
    }
  }
  effect = "read"
}

policy "rules" {
  rules {
    allow = ["show_token", "lookup"]
  }
}

budget "small" {
  max_iterations = 4
  timeout        = "30s"
}

agent "keeper" {
  description = "Uses both tools once, then answers"
  model       = model.remote
  system      = "Use both tools, then answer."
  tools       = [tool.show_token, tool.lookup]
  policies    = [policy.rules]
  budget      = budget.small

  loop {
    mode = "react"
  }
}
