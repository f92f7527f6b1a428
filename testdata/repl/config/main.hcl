# A configuration for the REPL's tests: two agents, a profile that removes a
# tool, rules that deny, ask and allow, and an MCP server.

variable "topic" {
  type        = string
  default     = "tides"
  description = "What the researcher looks into"
}

variable "input" {
  type    = string
  default = "What is 6 * 7?"
}

locals {
  greeting = "Hello, ${var.topic}!"
  limits   = [1, 2, 3]
}

model "offline" {
  provider = "scripted"
  script   = "scripts/answer.json"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

tool "read_notes" {
  description = "Read a note from the workspace"
  builtin     = "read_file"
}

tool "write_notes" {
  description = "Write a note into the workspace"
  builtin     = "write_file"
}

tool "notes_delete" {
  description = "Delete notes (never offered)"
  command {
    argv = ["true"]
  }
  effect = "destructive"
}

mcp_server "fs" {
  command = ["symbi-test-mcp-server"]
  effect  = "read"
}

tool_profile "readonly" {
  include = ["read_*", "calculator", "notes_*"]
  exclude = ["*_delete"]
}

policy "rules" {
  rules {
    deny  = ["calculator:expression=*/ 0*", "shell:cmd=sudo*"]
    ask   = ["write_*"]
    allow = ["calculator", "read_*"]
  }
}

budget "standard" {
  max_iterations   = 6
  max_tool_calls   = 4
  max_total_tokens = 20000
  timeout          = "30s"
}

agent "assistant" {
  description = "Answers arithmetic questions with the calculator"
  model       = model.offline
  tools       = [tool.calculator, tool.write_notes]
  policies    = [policy.rules]
  budget      = budget.standard

  loop {
    mode = "react"
  }
}

agent "researcher" {
  description  = "Reads notes about ${var.topic}"
  model        = model.offline
  tools        = [tool.calculator, tool.read_notes, tool.notes_delete, mcp_server.fs]
  tool_profile = tool_profile.readonly
  policies     = [policy.rules]

  loop {
    mode = "react"
  }
}
