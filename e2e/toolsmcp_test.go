package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// breakerConfig is an agent whose model calls a tool that always fails,
// five times, then answers. The tool counts its runs in a file. breaker is
// the tool's circuit_breaker block, or "" for none.
func breakerConfig(breaker string) string {
	var turns []string
	for i := 1; i <= 5; i++ {
		turns = append(turns, fmt.Sprintf(`{"tool_calls": [{"id": "c%d", "name": "broken", "arguments": {}}]}`, i))
	}
	turns = append(turns, `{"content": "It keeps failing."}`)
	return `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "broken" {
  description = "Always fails"
  command {
    argv = ["sh", "-c", "echo run >> runs.txt; echo 'service down' >&2; exit 1"]
  }
  ` + breaker + `
}

policy "rules" {
  rules {
    allow = ["broken"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.broken]
  policies = [policy.rules]
  progress {
    max_reattempts_per_step = 0   # the breaker alone is under test
  }
}
-- script.json --
{"turns": [` + strings.Join(turns, ", ") + `]}
`
}

// writeConfig writes a main.hcl and the files after "-- NAME --" lines in
// src into a new directory.
func writeConfig(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	parts := strings.Split(src, "\n-- ")
	writeFile(t, dir, "main.hcl", parts[0])
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, " --\n")
		writeFile(t, dir, name, body)
	}
	return dir
}

func runsOf(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// TestEveryToolHasACircuitBreaker: a tool without a circuit_breaker block
// has the default breaker (3 failures, 60s, 1 probe), so of five failing
// calls three run and two are refused as circuit_open; the plan shows the
// breaker; circuit_breaker { enabled = false } lets all five run.
func TestEveryToolHasACircuitBreaker(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, breakerConfig(""))
	r := symbi(t, call{dir: dir}, "plan", ".")
	if r.code != 0 || !strings.Contains(r.stdout, "circuit_breaker {\n    failure_threshold = 3\n    half_open_max_calls = 1\n    recovery_timeout = \"1m0s\"\n  }") {
		t.Errorf("the plan does not show the default breaker:\n%s", r)
	}
	r = symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if n := runsOf(t, dir); n != 3 {
		t.Errorf("the failing tool ran %d times of 5; want 3, then the breaker refuses", n)
	}
	evs := readJournal(t, filepath.Join(dir, ".symbi"), onlyRun(t, filepath.Join(dir, ".symbi")))
	var kinds []string
	for _, tr := range eventsOf[journal.ToolResultData](t, evs, journal.ToolResult) {
		kinds = append(kinds, tr.ErrorKind)
	}
	if got := strings.Join(kinds, " "); got != "error error error circuit_open circuit_open" {
		t.Errorf("tool results %q, want three errors, then circuit_open twice", got)
	}

	off := writeConfig(t, breakerConfig("circuit_breaker {\n    enabled = false\n  }"))
	r = symbi(t, call{dir: off}, "plan", ".")
	if r.code != 0 || !strings.Contains(r.stdout, "circuit_breaker {\n    disabled = true\n  }") {
		t.Errorf("the plan does not show the breaker off:\n%s", r)
	}
	r = symbi(t, call{dir: off}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if n := runsOf(t, off); n != 5 {
		t.Errorf("with the breaker off the tool ran %d times of 5", n)
	}
}
