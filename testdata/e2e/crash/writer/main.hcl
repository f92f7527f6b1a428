# A write cut short by a crash is not run again on resume. The "append" tool
# is the crashtool helper (testdata/e2e/crash/tool): it appends its call's
# idempotency key to var.log, then waits up to 30 s (less once
# var.log.release exists) before it answers. The e2e test kills symbi while
# it waits, after the line is written, resumes, and counts the lines. The
# model's next turn depends on what it was told about the call.

variable "tool" {
  type = string
}

variable "log" {
  type = string
}

variable "pids" {
  type = string
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "append" {
  description = "Appends a line to the log"
  parameters = {
    type       = "object"
    properties = { n = { type = "integer" }, after_ms = { type = "integer" } }
    required   = ["n"]
  }
  command {
    argv = [var.tool, "append", var.log, var.pids]
  }
  effect  = "write"
  timeout = "60s"
}

policy "rules" {
  rules {
    allow = ["append"]
  }
}

agent "writer" {
  model    = model.m
  tools    = [tool.append]
  policies = [policy.rules]
}
