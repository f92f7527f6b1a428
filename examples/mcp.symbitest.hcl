# MCP servers as tool sources. The example starts the filesystem server with
# npx and reaches a docs server over HTTP; the test starts both from the
# locally installed filesystem server (`(cd testdata/mcp && npm ci)`), so it
# needs no network and no other server.

run "joins_the_servers_tools" {
  input = "List the files"

  override_mcp_server {
    target  = mcp_server.fs
    command = ["node", "../testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."]
  }
  override_mcp_server {
    target  = mcp_server.docs
    command = ["node", "../testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."]
  }

  assert {
    condition     = run.answer == "42" && run.status == "completed"
    error_message = "The scripted model answers once the tools have joined."
  }
}
