# Secrets must not leak through side doors (issue #11, item 6): a dead
# letter, a service that echoes its token encoded, a run's input, a tool
# output on its way to the model.
#
# The model is an openai model served by the e2e test's fake server, which
# plays a hostile model: it calls whichever tool the test wants, with
# whatever arguments. Every secret comes from the environment, one per
# path, so a leak names its path.

variable "base_url" {
  type        = string
  description = "the fake server's /v1 URL"
}

variable "echo_url" {
  type        = string
  description = "the test's service that echoes the token it was sent, encoded"
}

variable "proof_dir" {
  type        = string
  description = "where the reveal tool writes the token it received"
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

# A failure is shelved in <state_dir>/dead_letter.jsonl: arguments and
# stderr.
recovery "shelve" {
  dead_letter {}
}

tool "flaky" {
  description = "Fails, quoting its token on stderr"
  parameters = {
    type       = "object"
    properties = { token = { type = "string" } }
  }
  command {
    argv = ["sh", "flaky.sh"]
    env = {
      TOKEN = env("SYMBI_E2E_DEAD_TOKEN")
    }
  }
  effect   = "read"
  recovery = recovery.shelve
}

tool "echo" {
  description = "Asks a service that answers with the token it was sent"
  parameters = {
    type       = "object"
    properties = { q = { type = "string" } }
  }
  http {
    url    = var.echo_url
    method = "POST"
    headers = {
      Authorization = "Bearer ${env("SYMBI_E2E_ECHO_TOKEN")}"
    }
  }
  effect = "read"
}

tool "reveal" {
  description = "Prints the token it was given"
  parameters = {
    type       = "object"
    properties = { note = { type = "string" } }
  }
  command {
    argv = ["sh", "reveal.sh"]
    env = {
      TOKEN     = env("SYMBI_E2E_TOOL_TOKEN")
      PROOF_DIR = var.proof_dir
    }
  }
  effect = "read"
}

policy "rules" {
  rules {
    allow = ["flaky", "echo", "reveal"]
  }
}

budget "small" {
  max_iterations = 4
  timeout        = "30s"
}

agent "leaky" {
  description = "Calls what the model asks for, then answers"
  model       = model.remote
  system      = "Use the tools you are asked to, then answer."
  tools       = [tool.flaky, tool.echo, tool.reveal]
  policies    = [policy.rules]
  budget      = budget.small

  loop {
    mode = "react"
  }
}
