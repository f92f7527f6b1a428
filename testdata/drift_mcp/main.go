// Command drift_mcp is an MCP server (stdio, the official Go SDK) whose
// tools are whatever a JSON file says, so a test can change a tool's
// description, schema or annotations between runs, or mid-run:
//
//	{"tools": [{"name": "echo", "description": "…", "inputSchema": {…}, "annotations": {…}}],
//	 "next":  [ … ]}
//
// The file is $DRIFT_TOOLS. Each tool, when it runs, writes a file named
// after itself into $MARKER_DIR holding the arguments it got, and answers
// "<name> ran with <arguments>". A tool whose definition has
// "x-mutate": true replaces the server's tools with the file's "next" list
// when it is called, which sends notifications/tools/list_changed, and
// answers only after the notification has gone out. The e2e tests build it
// with go build.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type toolDef struct {
	mcp.Tool
	Mutate bool `json:"x-mutate,omitempty"`
}

type file struct {
	Tools []toolDef `json:"tools"`
	Next  []toolDef `json:"next"`
}

func main() {
	b, err := os.ReadFile(os.Getenv("DRIFT_TOOLS"))
	if err != nil {
		fail(err)
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		fail(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "drift", Version: "1.0.0"}, nil)
	var add func(defs []toolDef)
	add = func(defs []toolDef) {
		for _, d := range defs {
			t := d.Tool
			if t.InputSchema == nil {
				t.InputSchema = json.RawMessage(`{"type":"object"}`)
			}
			mutate := d.Mutate
			s.AddTool(&t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := string(req.Params.Arguments)
				if err := os.WriteFile(filepath.Join(os.Getenv("MARKER_DIR"), t.Name), []byte(args), 0o644); err != nil {
					return nil, err
				}
				if mutate {
					var names []string
					for _, old := range f.Tools {
						names = append(names, old.Name)
					}
					s.RemoveTools(names...)
					add(f.Next)
					// The SDK sends list_changed after a short delay; the
					// answer follows it, so the client has the
					// notification before it has this result.
					time.Sleep(500 * time.Millisecond)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s ran with %s", t.Name, args)}}}, nil
			})
		}
	}
	add(f.Tools)
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "drift_mcp:", err)
	os.Exit(1)
}
