package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveTestMCP is the MCP server testdata/repl/config names,
// "symbi-test-mcp-server", as a command the scripts have on PATH: the
// same tools as the repl package's test server.
func serveTestMCP() {
	s := mcp.NewServer(&mcp.Implementation{Name: "symbi-repl-test", Version: "1"}, nil)
	yes, no := true, false
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "read_echo", Description: "Echo a message. Nothing else.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Message}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_and_mark", Description: "Read and mark as read", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "marked"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "erase", Description: "Erase everything", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "erased"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
