# An agent whose tools come from a real MCP server: the filesystem server from
# npm, started over stdio, limited by a tool profile to reading. Offline on the
# scripted model. Install the server once, then run:
#
#   (cd testdata/mcp && npm ci --no-audit --no-fund)
#   go run ./cmd/symbi run examples/tools-mcp.hcl
#
# The server may read only this directory (its last argument, "."; the server
# runs in the configuration directory). The block's effect, "read", is a floor
# the tools' annotations can only raise: the read-only tools stay "read",
# write_file (renamed fs__write_file, a builtin's name) is "destructive", and
# the profile hides every writing tool from the agent.
#
# tools-mcp.lock.hcl beside this file pins what the server's tools are: every
# run checks them and refuses one that changed (CI runs
# `symbi lock -check examples/tools-mcp.hcl`).

symbi {
  state_dir = ".symbi"
}

variable "input" {
  type    = string
  default = "Which tool scripts does this example directory have?"
}

model "offline" {
  provider = "scripted"
  script   = "scripts/tools_mcp.json"
}

mcp_server "fs" {
  command = ["node", "../testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."]
  # Without the local install: command = ["npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "."]
  effect  = "read"
  timeout = "30s"
}

tool_profile "reader" {
  include = ["list_*", "read_text_file", "directory_tree"]
  exclude = ["*_with_sizes"]
}

policy "rules" {
  rules {
    allow = ["list_directory", "read_text_file", "directory_tree"]
  }
}

budget "mcp" {
  max_iterations = 6
  max_tool_calls = 4
  timeout        = "60s"
}

agent "librarian" {
  description  = "Answers questions about the files in this directory"
  model        = model.offline
  system       = "Use the filesystem tools to look before you answer."
  tools        = [mcp_server.fs]
  tool_profile = tool_profile.reader
  policies     = [policy.rules]
  budget       = budget.mcp

  loop {
    mode = "react"
  }
}
