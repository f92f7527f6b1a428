mcp_server "fs" { # ERROR: MCP server needs one transport
  command = ["server"]
  url     = "http://127.0.0.1:9000/mcp"
}
