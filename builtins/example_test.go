package builtins

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/plan"
)

// TestResilienceExampleTools runs the tools of examples/tools-resilience.hcl
// (the same scripts and settings, built by hand because the compiler sits
// above this package) through the sequence the example's script drives: two
// searches against a primary that is down.
func TestResilienceExampleTools(t *testing.T) {
	base, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	schema := []byte(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	search := plan.Tool{
		Address: "tool.search", Parameters: schema, Effect: "read", Timeout: plan.Duration(5 * time.Second), MaxOutputBytes: 16384,
		Executor:       plan.Executor{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{plan.Lit("./tools/search_primary.sh")}, Dir: "."}},
		CircuitBreaker: &plan.CircuitBreaker{FailureThreshold: 2, RecoveryTimeout: plan.Duration(time.Minute), HalfOpenMaxCalls: 1},
		Recovery:       "recovery.search",
	}
	backup := plan.Tool{
		Address: "tool.backup_search", Parameters: schema, Effect: "read", Timeout: plan.Duration(5 * time.Second),
		Executor: plan.Executor{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{plan.Lit("./tools/search_backup.sh")}, Dir: "."}},
	}
	recovery := chain(
		plan.RecoveryStrategy{Kind: "retry", Retry: &plan.RetryStrategy{MaxAttempts: 2, InitialBackoff: plan.Duration(50 * time.Millisecond), MaxBackoff: plan.Duration(200 * time.Millisecond), Multiplier: 2, Jitter: 0.2, On: []string{"timeout", "transport", "error"}}},
		fallbackStep("tool.backup_search"),
		deadLetterStep(),
	)
	clock := newFakeClock()
	state := t.TempDir()
	tb := newToolbox(t, []plan.Tool{search, backup}, nil, Options{BaseDir: base, StateDir: state, Now: clock.Now, Sleep: clock.Sleep})
	ev := &events{}
	hooks := RecoveryHooks{Gate: gateFunc(allowAll(t, tb)), Event: ev.add}
	ctx := context.Background()

	for i, q := range []string{"sea otter diet", "sea otter habitat"} {
		call := approve(t, tb, "search", `{"query":"`+q+`"}`)
		_, err := tb.Call(ctx, call)
		if err == nil {
			t.Fatal("the primary is down on purpose")
		}
		if i == 1 {
			wantKind(t, err, CircuitOpen)
		}
		r, err := tb.Recover(ctx, call, err, recovery, hooks)
		if err != nil {
			t.Fatalf("search %d: %v", i+1, err)
		}
		if r.Tool != "backup_search" || !strings.Contains(r.Content, `backup index: results for "`+q+`"`) {
			t.Errorf("search %d: %+v", i+1, r)
		}
		if i == 0 {
			if s, _ := tb.BreakerState("search"); s != Open {
				t.Errorf("after the first search the circuit is %s, want open", s)
			}
		}
	}
	want := []string{"retry#1 error", "fallback#1 error", "retry#1 circuit_open", "fallback#1 circuit_open"}
	if diff := cmp.Diff(want, ev.list()); diff != "" {
		t.Errorf("recovery events (-want +got):\n%s", diff)
	}
}

// TestMCPExampleTools runs the MCP server of examples/tools-mcp.hcl as the
// example declares it (relative paths, started in the configuration
// directory), applies its profile, and makes the calls its script makes.
func TestMCPExampleTools(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; CI installs it")
	}
	if _, err := os.Stat(filepath.Join(testdataDir(t), "mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")); err != nil {
		t.Skip("the npm MCP server is not installed; run: (cd testdata/mcp && npm ci --no-audit --no-fund)")
	}
	base, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	s := plan.MCPServer{
		Address: "mcp_server.fs",
		Command: []plan.String{plan.Lit("node"), plan.Lit("../testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), plan.Lit(".")},
		Effect:  "read",
		Timeout: plan.Duration(30 * time.Second),
	}
	tb := newToolbox(t, nil, []plan.MCPServer{s}, Options{BaseDir: base})
	visible := ApplyProfile(tb.Names(), []string{"list_*", "read_text_file", "directory_tree"}, []string{"*_with_sizes"}, 0)
	if diff := cmp.Diff([]string{"read_text_file", "list_directory", "directory_tree", "list_allowed_directories"}, visible); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	r, err := tb.Call(ctx, approve(t, tb, "list_directory", `{"path":"tools"}`))
	if err != nil || !strings.Contains(r.Content, "[FILE] search_backup.sh") {
		t.Fatalf("list_directory: %+v %v", r, err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "read_text_file", `{"path":"tools/search_backup.sh","head":3}`))
	if err != nil || !strings.Contains(r.Content, "backup search backend") {
		t.Fatalf("read_text_file: %+v %v", r, err)
	}
}
