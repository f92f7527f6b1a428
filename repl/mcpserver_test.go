package repl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// TestMain doubles as the MCP server testdata/repl/config names,
// "symbi-test-mcp-server": a script of that name on PATH runs this test
// binary with SYMBI_TEST_MCP_SERVER=stdio, which serves testServer on
// stdin and stdout. So :tools and :call start a real server process.
func TestMain(m *testing.M) {
	if os.Getenv("SYMBI_TEST_MCP_SERVER") == "stdio" {
		if err := testServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(withTestServerOnPath(m))
}

func withTestServerOnPath(m *testing.M) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "symbi-repl-mcp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	script := fmt.Sprintf("#!/bin/sh\nSYMBI_TEST_MCP_SERVER=stdio exec '%s' -test.run='^$'\n", exe)
	if err := os.WriteFile(filepath.Join(dir, "symbi-test-mcp-server"), []byte(script), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return m.Run()
}

type echoIn struct {
	Message string `json:"message"`
}

// testServer has a tool the researcher's profile keeps (read_echo, read
// only), one it removes (erase) and one it keeps that writes by its own
// account (read_and_mark: the block says read, the annotation raises it).
func testServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "symbi-repl-test", Version: "1"}, nil)
	yes, no := true, false
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
	return s
}

// :call runs a tool of an agent's MCP server, gated like any call by the
// agents whose runs offer it; the servers start once for the session and
// stop when the configuration is loaded again or the session ends.
func TestCallServerTool(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	want := `agent.researcher: allow by policy.rules (rules): tool_call "read_echo" matches allow rule "read_*"
echo: hi
`
	if got := handle(t, s, `:call read_echo {message = "hi"}`); got != want {
		t.Errorf(":call read_echo:\n%s", cmp.Diff(want, got))
	}
	box, err := s.toolEng.Toolbox(context.Background(), "researcher")
	if err != nil {
		t.Fatal(err)
	}
	handle(t, s, ":tools researcher")
	if again, _ := s.toolEng.Toolbox(context.Background(), "researcher"); again != box {
		t.Error(":tools started the researcher's servers again")
	}
	// A tool the profile removed is offered to no agent: refused.
	_, _, diags := s.Handle(context.Background(), `:call erase {}`)
	if len(diags) == 0 || diags[0].Summary != "No such tool" {
		t.Errorf(":call erase: %v", diags)
	}
	_, _, diags = s.Handle(context.Background(), `:call read_echo {message = 5}`)
	if len(diags) == 0 || diags[0].Summary != "Invalid arguments" {
		t.Errorf(":call read_echo with a number: %v", diags)
	}
	if diags := s.Load(s.from); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if s.toolEng != nil {
		t.Error(":reload kept the old configuration's servers")
	}
	if _, err := box.Call(context.Background(), approveAll(t, box, "read_echo", `{"message":"x"}`)); err == nil {
		t.Error("the old toolbox still calls its server after the reload")
	}
}

// approveAll approves a call through a chain that allows everything.
func approveAll(t *testing.T, box *builtins.Toolbox, tool, args string) policy.Approved {
	t.Helper()
	rules, err := policy.NewRules(plan.RulesPolicy{Allow: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	v := policy.NewChain([]policy.Link{{Address: "policy.all", Gate: rules}}, "deny", nil).
		Gate(context.Background(), policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: tool, Arguments: json.RawMessage(args)}})
	if !v.Approved.Valid() {
		t.Fatalf("not approved: %+v", v.Decision)
	}
	return v.Approved
}
