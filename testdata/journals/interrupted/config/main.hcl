# Runs interrupted mid-iteration, for resume: the model reads with the
# calculator, then appends to a log (a tool that writes), then answers. Each
# recorded run is cut where a process killed at that moment leaves its
# journal: while the model thought, while the writing tool ran, and that with
# a torn last line.

model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

tool "append" {
  description = "Appends a line to the log"
  parameters = {
    type       = "object"
    properties = { line = { type = "string" } }
    required   = ["line"]
  }
  command {
    argv = ["sh", "-c", "cat >> log.txt; echo >> log.txt; echo appended"]
  }
  effect = "write"
}

policy "rules" {
  rules {
    allow = ["calculator", "append"]
  }
}

agent "logger" {
  model    = model.m
  system   = "Compute, then log the result."
  tools    = [tool.calculator, tool.append]
  policies = [policy.rules]

  loop {
    mode = "react"
  }
}
