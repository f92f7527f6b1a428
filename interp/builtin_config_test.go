package interp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// TestBuiltinSettingsReachTheToolbox compiles a configuration that sets the
// workspace and an http_get tool's allow_hosts, and runs the tools from the
// plan as the engine does: builtins.Options.Workspace is the configuration
// directory joined with Settings.Workspace, and each http_get tool brings its
// own allow list in plan.Tool.AllowHosts.
func TestBuiltinSettingsReachTheToolbox(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "fetched")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "files", "note.txt"), []byte("inside the workspace"))
	writeFile(t, filepath.Join(dir, "outside.txt"), []byte("outside"))
	writeFile(t, filepath.Join(dir, "main.hcl"), []byte(fmt.Sprintf(`symbi {
  workspace = "files"
}

tool "fetch" {
  builtin     = "http_get"
  allow_hosts = ["127.0.0.1:%s"]
}

tool "fetch_docs" {
  builtin     = "http_get"
  allow_hosts = ["docs.example.com"]
}

tool "read_file" {
  builtin = "read_file"
}

policy "p" {
  rules {
    allow = ["*"]
  }
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

agent "a" {
  model    = model.m
  tools    = [tool.fetch, tool.fetch_docs, tool.read_file]
  policies = [policy.p]
}
`, u.Port())))
	writeFile(t, filepath.Join(dir, "script.json"), []byte(`{"turns":[{"content":"ok"}]}`))

	cfg, diags := Compile(dir, Options{LookupEnv: noEnv})
	if diags.HasErrors() {
		t.Fatal(formatDiags(diags))
	}
	p := cfg.Plan
	if p.Settings.Workspace != "files" {
		t.Fatalf("Settings.Workspace = %q, want files", p.Settings.Workspace)
	}
	ctx := context.Background()
	box, err := builtins.NewToolbox(ctx, p.Tools, nil, builtins.Options{
		BaseDir:   cfg.BaseDir,
		Workspace: filepath.Join(cfg.BaseDir, p.Settings.Workspace),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	chain, err := policy.ChainFromPlan(ctx, p, "agent.a", cfg.BaseDir, box.Validate)
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool, args string) (builtins.Result, error) {
		v := chain.Gate(ctx, policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: tool, Arguments: json.RawMessage(args)}})
		if !v.Approved.Valid() {
			t.Fatalf("%s not approved: %+v", tool, v.Decision)
		}
		return box.Call(ctx, v.Approved)
	}

	if r, err := call("fetch", fmt.Sprintf(`{"url":%q}`, srv.URL)); err != nil || r.Content != "fetched" {
		t.Errorf("fetch from its allowed host: %q %v", r.Content, err)
	}
	if _, err := call("fetch_docs", fmt.Sprintf(`{"url":%q}`, srv.URL)); !errors.Is(err, builtins.ErrHostNotAllowed) {
		t.Errorf("fetch_docs fetched a host not on its list: %v", err)
	}
	if r, err := call("read_file", `{"path":"note.txt"}`); err != nil || r.Content != "inside the workspace" {
		t.Errorf("read_file in the workspace: %q %v", r.Content, err)
	}
	if _, err := call("read_file", `{"path":"../outside.txt"}`); !errors.Is(err, builtins.ErrOutsideWorkspace) {
		t.Errorf("read_file left the workspace: %v", err)
	}

	// The plan holds the workspace relative, as written, never absolute.
	js, err := plan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if abs, _ := filepath.Abs(dir); bytes.Contains(js, []byte(abs)) {
		t.Errorf("the plan holds the absolute configuration directory %s", abs)
	}
}
