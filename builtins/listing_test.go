package builtins

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/plan"
)

// A toolbox built from another's listings offers the same tools under the
// same names, without starting a process; its calls go to Execute with
// the definition of the tool it was offered, and a worker whose server
// offers another definition refuses the call.
func TestListingsRoundTrip(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; CI installs it")
	}
	script := filepath.Join(testdataDir(t), "mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Skip("the npm MCP server is not installed; run: (cd testdata/mcp && npm ci --no-audit --no-fund)")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644)
	s := plan.MCPServer{
		Address: "mcp_server.fs",
		Command: []plan.String{plan.Lit(node), plan.Lit(script), plan.Lit(dir)},
		Effect:  "read",
		Timeout: plan.Duration(30 * time.Second),
	}
	tools := []plan.Tool{builtinTool("read_file")}
	worker := newToolbox(t, tools, []plan.MCPServer{s}, Options{Workspace: dir})
	ls, err := worker.Listings()
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls[0].Server != "mcp_server.fs" {
		t.Fatalf("listings %+v", ls)
	}
	// Through JSON, as the listing crosses a workflow's history.
	b, err := json.Marshal(ls)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("listing: %d bytes", len(b))
	var again []ServerListing
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	var sent []Execution
	wf := newToolbox(t, tools, []plan.MCPServer{s}, Options{
		Workspace: dir,
		ListServers: func(_ context.Context, servers []plan.MCPServer) ([]ServerListing, error) {
			if len(servers) != 1 || servers[0].Address != s.Address {
				t.Errorf("asked to list %v", servers)
			}
			return again, nil
		},
		Execute: func(ctx context.Context, x Execution) (Result, error) {
			sent = append(sent, x)
			return worker.ExecuteCall(ctx, x)
		},
	})
	if len(wf.sessions) != 1 || !wf.sessions[0].listed || wf.sessions[0].cmd != nil {
		t.Fatalf("the listed toolbox connected its server: %+v", wf.sessions)
	}
	if d := cmp.Diff(worker.Names(), wf.Names()); d != "" {
		t.Fatalf("names (-worker +listed):\n%s", d)
	}
	for _, n := range worker.Names() {
		a, _ := worker.Info(n)
		b, _ := wf.Info(n)
		if d := cmp.Diff(a, b); d != "" {
			t.Errorf("%s (-worker +listed):\n%s", n, d)
		}
	}
	args := json.RawMessage(`{"path":"` + filepath.ToSlash(filepath.Join(dir, "hello.txt")) + `"}`)
	res, err := wf.call(context.Background(), "read_text_file", args, 0)
	if err != nil || !strings.Contains(res.Content, "hello") {
		t.Fatalf("call through the listing: %q %v", res.Content, err)
	}
	if len(sent) != 1 || sent[0].Definition == "" || !strings.HasPrefix(sent[0].Definition, "sha256:") {
		t.Fatalf("executions %+v", sent)
	}

	x := sent[0]
	x.Definition = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	if _, err := worker.ExecuteCall(context.Background(), x); err == nil || !strings.Contains(err.Error(), "another definition") {
		t.Fatalf("another definition: %v", err)
	}
}

// A listing that does not decode is an error naming the server, never a
// panic.
func TestListingHostile(t *testing.T) {
	s := plan.MCPServer{Address: "mcp_server.x", Command: []plan.String{plan.Lit("/nonexistent")}}
	for _, tools := range []string{`{"a":1}`, `[null]`, `"x"`, `[{"name":"ok","inputSchema":{"type":"object"}},{"name":"bad name!","inputSchema":{"type":"object"}}]`} {
		_, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{
			BaseDir: t.TempDir(),
			ListServers: func(context.Context, []plan.MCPServer) ([]ServerListing, error) {
				return []ServerListing{{Server: s.Address, Tools: json.RawMessage(tools)}}, nil
			},
			Execute: func(context.Context, Execution) (Result, error) { return Result{}, nil },
		})
		if err == nil || !strings.Contains(err.Error(), "mcp_server.x") {
			t.Errorf("listing %s: %v", tools, err)
		}
	}
	_, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{
		BaseDir:     t.TempDir(),
		ListServers: func(context.Context, []plan.MCPServer) ([]ServerListing, error) { return nil, nil },
	})
	if err == nil || !strings.Contains(err.Error(), "mcp_server.x") {
		t.Errorf("no listing: %v", err)
	}
}
