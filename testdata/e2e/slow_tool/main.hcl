# A tool that outlives the run's budget. The scripted model calls "nap", a
# command tool that sleeps for var.nap seconds (the e2e test picks a
# distinctive number, so it can find the process); the budget's timeout is 1 s
# and the tool's own timeout is long. The run must end at the budget's timeout
# and take the sleeping process with it.

variable "nap" {
  type = string
}

model "offline" {
  provider = "scripted"
  script   = "script.json"
}

tool "nap" {
  description = "Sleeps"
  command {
    argv = ["sleep", var.nap]
  }
  timeout = "5m"
}

policy "rules" {
  rules {
    allow = ["nap"]
  }
}

budget "one_second" {
  timeout = "1s"
}

agent "sleeper" {
  model    = model.offline
  tools    = [tool.nap]
  policies = [policy.rules]
  budget   = budget.one_second

  loop {
    tool_timeout = "5m"
  }
}
