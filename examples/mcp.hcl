# MCP servers as tool sources: one over stdio (the npm filesystem server) and
# one over streamable HTTP whose URL and token come from the environment at
# run time (env() is kept as source in the plan, never its value). A profile
# keeps the agent to reading.
#
#   symbi plan examples/mcp.hcl
#   DOCS_MCP_URL=http://127.0.0.1:9000/mcp symbi run examples/mcp.hcl "List the files"
#
# npx fetches the package it names: the command pins its exact version, so
# every run starts the same server. Pin the tools too, with both servers
# reachable, and commit the mcp.lock.hcl it writes:
#
#   DOCS_MCP_URL=http://127.0.0.1:9000/mcp symbi lock examples/mcp.hcl

model "offline" {
  provider = "scripted"
  script   = "scripts/ex_answer.json"
}

mcp_server "fs" {
  command = ["npx", "-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "."]
  env     = { NODE_NO_WARNINGS = "1" }
  effect  = "read"
  timeout = "30s"
}

mcp_server "docs" {
  url     = env("DOCS_MCP_URL", "http://127.0.0.1:9000/mcp")
  effect  = "read"
  timeout = "10s"
}

tool "read_text" {
  description = "Read a text file through the filesystem server"
  mcp {
    server = mcp_server.fs
    tool   = "read_text_file"
  }
}

tool_profile "reading" {
  include   = ["read_*", "list_*", "search_*"]
  max_tools = 10
}

policy "read_only" {
  rules {
    allow = ["read_*", "list_*", "search_*"]
  }
}

agent "browser" {
  model        = model.offline
  tools        = [tool.read_text, mcp_server.fs, mcp_server.docs]
  tool_profile = tool_profile.reading
  policies     = [policy.read_only]
  loop {
    on_no_policy = "deny"
  }
}
