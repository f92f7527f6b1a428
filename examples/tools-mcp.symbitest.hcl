# MCP tools: the librarian lists and reads the example's tool scripts through
# the npm filesystem server (installed by `(cd testdata/mcp && npm ci)`).

run "reads_through_mcp" {
  assert {
    condition     = strcontains(run.answer, "search_backup.sh")
    error_message = "The answer names the scripts: ${run.answer}"
  }
  assert {
    condition     = [for c in run.tool_calls : c.name] == ["list_directory", "read_text_file"] && alltrue([for c in run.tool_calls : c.decision == "allow" && c.error == ""])
    error_message = "The server's read-only tools are allowed and answer."
  }
}
