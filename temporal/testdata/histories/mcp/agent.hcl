# The replay case "mcp" (replay_test.go): an agent over the npm filesystem
# server. The history is recorded in testdata/histories/mcp, from where the
# command's path reaches the repository's testdata/mcp; a replay starts no
# server (the tool list is the symbi.servers activity's result).

model "m" {
  provider = "scripted"
  script   = "script.json"
}

mcp_server "fs" {
  command = ["node", "../../../../testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."]
  effect  = "read"
}

policy "rules" {
  rules {
    allow = ["list_directory"]
  }
}

agent "a" {
  model    = model.m
  tools    = [mcp_server.fs]
  policies = [policy.rules]
}
