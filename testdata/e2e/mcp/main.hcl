# An agent whose tools come from the real MCP filesystem server from npm
# (testdata/mcp), started over stdio by node. The e2e test gives the server's
# entry point as var.server and the one directory it may read as var.root
# (this directory, copied to a temporary one). The scripted model first tries
# write_file, which the profile hides and no policy allows, then lists the
# shelf, reads a note it found there, and answers with what the note says: it
# can only get there if each tool result reached it.

variable "server" {
  type        = string
  description = "path of @modelcontextprotocol/server-filesystem's dist/index.js"
}

variable "root" {
  type        = string
  description = "the directory the server may read: this configuration's"
}

model "offline" {
  provider = "scripted"
  script   = "script.json"
}

mcp_server "fs" {
  command = ["node", var.server, var.root]
  env     = { NODE_NO_WARNINGS = "1" }
  effect  = "read"
  timeout = "30s"
}

tool_profile "reader" {
  include = ["list_directory", "read_text_file"]
}

policy "rules" {
  rules {
    allow = ["list_directory", "read_text_file"]
  }
}

budget "mcp" {
  max_iterations = 6
  max_tool_calls = 4
  timeout        = "60s"
}

agent "librarian" {
  description  = "Answers questions about the shelf"
  model        = model.offline
  system       = "Look at the files before you answer."
  tools        = [mcp_server.fs]
  tool_profile = tool_profile.reader
  policies     = [policy.rules]
  budget       = budget.mcp
}

# The same server, but the test kills it between two calls: the second call
# must fail as a typed observation the model sees, not hang or crash the run.
model "patient" {
  provider = "scripted"
  script   = "script_server_dies.json"
}

agent "survivor" {
  description  = "Carries on when the server dies"
  model        = model.patient
  tools        = [mcp_server.fs]
  tool_profile = tool_profile.reader
  policies     = [policy.rules]
  budget       = budget.mcp
}
