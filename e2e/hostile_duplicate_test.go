package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hostile model names an argument twice. Go's reader, and so the gate,
// keeps the last value; a tool whose reader keeps the first (or its own
// naive scan) would act on the other one, so what the gate decided would
// not be what runs. Such arguments are refused before the gate.
func TestHostileDuplicateArgumentIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "marker")
	writeFile(t, dir, "main.hcl", `
variable "marker" {
  type = string
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

# Records the arguments exactly as it receives them.
tool "remove" {
  description = "Removes a file"
  parameters = {
    type                 = "object"
    properties           = { path = { type = "string" } }
    required             = ["path"]
    additionalProperties = false
  }
  command {
    argv = ["sh", "-c", "cat >\"$MARKER\"; echo removed"]
    env  = { MARKER = var.marker }
  }
  effect = "destructive"
}

policy "scratch_only" {
  rules {
    allow = ["remove:path=tmp/*"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.remove]
  policies = [policy.scratch_only]
}
`)
	writeFile(t, dir, "script.json", `{
  "turns": [
    {"tool_calls": [{"id": "call_rm", "name": "remove", "arguments": "{\"path\":\"important/db\",\"path\":\"tmp/x\"}"}]},
    {"when": "twice", "content": "Refused."},
    {"when": "removed", "content": "Removed."}
  ],
  "on_exhausted": "error"
}`)
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--state-dir", state, "--var", "marker="+marker, ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the tool ran with %s although the gate saw only path=tmp/x", b)
	}
	if !strings.Contains(r.stdout, "Refused.") {
		t.Errorf("the model was not told its arguments were refused:\n%s", r)
	}
	if !observed(t, readJournal(t, state, onlyRun(t, state)), "[invalid arguments] remove: arguments name the member \"path\" twice") {
		t.Errorf("no invalid-arguments observation naming the member in the journal")
	}
}
