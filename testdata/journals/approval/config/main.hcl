# A tool call that needs a person: without a terminal, the run waits for
# the approval queue, which `symbi approve` answers.

model "offline" {
  provider = "scripted"
  script   = "script.json"
}

tool "delete_file" {
  description = "Delete a file"
  parameters = {
    type       = "object"
    properties = { path = { type = "string" } }
    required   = ["path"]
  }
  command {
    argv = ["sh", "-c", "cat >/dev/null; echo deleted"]
  }
  effect   = "destructive"
  approval = "always"
}

policy "rules" {
  rules {
    allow = ["delete_file"]
  }
}

agent "janitor" {
  model    = model.offline
  tools    = [tool.delete_file]
  policies = [policy.rules]
}
