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

// TestTruncatedOutputIsSaidToTheModel: a result cut at max_output_bytes
// is flagged in the journal with its size before the cut, and the model's
// observation (what the next request carries) ends with a note that says
// how much of it is shown.
func TestTruncatedOutputIsSaidToTheModel(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "read_file" {
  builtin          = "read_file"
  max_output_bytes = 1000
}

policy "rules" {
  rules {
    allow = ["read_file"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.read_file]
  policies = [policy.rules]
}
-- script.json --
{"turns": [{"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "big.txt"}}]}, {"content": "Read."}]}
`)
	writeFile(t, dir, "big.txt", strings.Repeat("0123456789", 500))
	r := symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	state := filepath.Join(dir, ".symbi")
	evs := readJournal(t, state, onlyRun(t, state))
	trs := eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)
	if len(trs) != 1 || !trs[0].Truncated || trs[0].OriginalBytes != 5000 || len(trs[0].Output) != 1000 {
		t.Fatalf("tool_result %+v, want 1000 bytes shown of 5000, truncated", trs)
	}
	const note = "[output truncated at max_output_bytes (1000): the first 1000 of 5000 bytes are shown]"
	for _, ev := range evs {
		if ev.Type == journal.ObservationsCollected && strings.Contains(string(ev.Data), note) {
			return
		}
	}
	t.Errorf("no observation tells the model the output was cut (%q)", note)
}

// TestArgumentsThatAreNotJSON: a model's tool-call arguments that are not
// JSON are refused before the gate with where they stop being JSON, not
// as "a string that is not an object"; the call never runs, and `policy
// eval --action` says the same of its text.
func TestArgumentsThatAreNotJSON(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "calculator" {
  builtin = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
-- script.json --
{"turns": [{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": "{not json"}]}, {"content": "Sorry."}]}
`)
	r := symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	const want = "[invalid arguments] calculator: arguments are not valid JSON: invalid character 'n' looking for beginning of object key string, at offset 2 (line 1, column 2)"
	state := filepath.Join(dir, ".symbi")
	evs := readJournal(t, state, onlyRun(t, state))
	pe := eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated)
	if len(pe) == 0 || len(pe[0].Decisions) != 1 || pe[0].Decisions[0].Decision.Reason != want {
		t.Errorf("the gate's record %+v, want a refusal: %s", pe, want)
	}
	if n := len(eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)); n != 0 {
		t.Errorf("%d tool results: the call ran", n)
	}
	if !strings.Contains(r.stderr, "not valid JSON") || strings.Contains(r.stderr, "got string") {
		t.Errorf("stderr does not say the arguments are not JSON:\n%s", r.stderr)
	}

	r = symbi(t, call{dir: dir}, "policy", "eval", "policy.rules", "--action", "{not json", ".")
	if r.code != 2 || !strings.Contains(r.stderr, "not valid JSON: invalid character 'n' looking for beginning of object key string, at offset 2 (line 1, column 2)") {
		t.Errorf("policy eval --action '{not json':\n%s", r)
	}
}

// TestBestOfWithAgentIsAUsageError: --best-of names a block that runs its
// own agent, so --agent beside it was silently ignored; now the two
// together are refused (exit 2) before anything is compiled or run.
func TestBestOfWithAgentIsAUsageError(t *testing.T) {
	t.Parallel()
	examples, err := filepath.Abs(filepath.Join("..", "examples", "best_of_n.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{}, "run", "--best-of", "answer", "--agent", "solver", "--state-dir", state, examples, "Name a colour.")
	if r.code != 2 || !strings.Contains(r.stderr, "--agent and --best-of cannot be used together") {
		t.Errorf("--best-of with --agent:\n%s", r)
	}
	if _, err := os.Stat(state); err == nil {
		t.Errorf("a refused command wrote %s", state)
	}
}
