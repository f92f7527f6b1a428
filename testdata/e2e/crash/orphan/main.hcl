# Tool processes die with symbi. The agent's stdio MCP server and its
# "block" command tool are the crashtool helper (testdata/e2e/crash/tool),
# one process each, which record their pids in var.pids; the block tool never
# answers, and writes var.late if it is still alive 20 s later. The e2e test
# kills symbi with SIGKILL while the block tool runs and expects both
# processes to be gone.

variable "tool" {
  type = string
}

variable "pids" {
  type = string
}

variable "late" {
  type = string
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

mcp_server "helper" {
  command = [var.tool, "mcp", var.pids]
  effect  = "read"
}

tool "block" {
  description = "Waits"
  command {
    argv = [var.tool, "block", var.pids, var.late]
  }
  effect  = "read"
  timeout = "60s"
}

policy "rules" {
  rules {
    allow = ["block", "record"]
  }
}

agent "waiter" {
  model    = model.m
  tools    = [tool.block, mcp_server.helper]
  policies = [policy.rules]
  budget   = budget.long
}

budget "long" {
  timeout = "120s"
}
