package temporal

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/symbi-dev/symbi/temporal/contract"
)

// mcpInstalled skips the test without node or the npm MCP servers
// (testdata/mcp), as the local MCP tests do.
func mcpInstalled(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; CI installs it")
	}
	if _, err := os.Stat(filepath.Join("..", "testdata", "mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")); err != nil {
		t.Skip("the npm MCP servers are not installed; run: (cd testdata/mcp && npm ci --no-audit --no-fund)")
	}
}

// An agent whose tools come from the npm filesystem server runs on
// Temporal as it runs locally: the worker starts the server, its tool list
// reaches the workflow through the servers activity, checked against the
// lock file, and each call is a tool activity.
func TestMCPServerMatchesLocal(t *testing.T) {
	mcpInstalled(t)
	p, base := compile(t, "../examples/tools-mcp.hcl")
	input := "Which tool scripts does this example directory have?"
	want, wantEvs := local(t, p, base, "", input)
	te, acts := env(t, base)
	te.SetTestTimeout(time.Minute) // the server starts in real time
	var servers, tools int
	te.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		switch info.ActivityType.Name {
		case contract.ServersActivity:
			servers++
		case contract.ToolActivity:
			tools++
		}
	})
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", input))
	got, gotEvs := outcome(t, te)
	same(t, want, wantEvs, got, gotEvs)
	if servers != 1 || tools == 0 {
		t.Errorf("%d servers activities, %d tool activities", servers, tools)
	}
	if got.Termination.Reason != "completed" || !strings.Contains(got.Answer, "search_primary.sh") {
		t.Errorf("answer %q (%s)", got.Answer, got.Termination.Reason)
	}
}

// driftFixture is an agent on the npm filesystem server with a lock file
// that pins no server, so the server is drift; onDrift is the server's
// on_drift.
func driftFixture(t *testing.T, onDrift string) string {
	t.Helper()
	server, err := filepath.Abs(filepath.Join("..", "testdata", "mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	return files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
mcp_server "fs" {
  command  = ["node", "` + filepath.ToSlash(server) + `", "."]
  effect   = "read"
  on_drift = "` + onDrift + `"
}
policy "rules" {
  rules { allow = ["list_directory"] }
}
agent "a" {
  model    = model.m
  tools    = [mcp_server.fs]
  policies = [policy.rules]
}
`,
		"symbi.lock.hcl": "# pins nothing: every server is drift\n",
		"notes/a.md":     "a\n",
		"script.json":    `{"turns": [{"when": "look", "tool_calls": [{"id": "c1", "name": "list_directory", "arguments": {"path": "notes"}}]}, {"when": "a.md", "content": "one note"}, {"when": "/", "content": "no tools"}]}`,
	})
}

// The lock check runs where the server runs, on the worker, and settles
// drift as a local run does: on_drift = "refuse" keeps the run from
// starting, naming the server; "warn" runs it with the same drift events
// and answer as locally.
func TestMCPServerDriftOnWorker(t *testing.T) {
	mcpInstalled(t)
	t.Run("refuse", func(t *testing.T) {
		p, base := compile(t, driftFixture(t, "refuse"))
		te, acts := env(t, base)
		te.SetTestTimeout(time.Minute)
		te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "look"))
		err := te.GetWorkflowError()
		if err == nil || !strings.Contains(err.Error(), "on_drift") || !strings.Contains(err.Error(), "fs") {
			t.Fatalf("workflow error %v", err)
		}
	})
	t.Run("warn", func(t *testing.T) {
		p, base := compile(t, driftFixture(t, "warn"))
		want, wantEvs := local(t, p, base, "", "look")
		te, acts := env(t, base)
		te.SetTestTimeout(time.Minute)
		te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "look"))
		got, gotEvs := outcome(t, te)
		same(t, want, wantEvs, got, gotEvs)
		if got.Answer != "one note" {
			t.Errorf("answer %q", got.Answer)
		}
		drift := false
		for _, ev := range gotEvs {
			drift = drift || strings.Contains(ev.Type, "drift")
		}
		if !drift {
			t.Errorf("no drift event in %v", timeline(t, gotEvs))
		}
	})
}
