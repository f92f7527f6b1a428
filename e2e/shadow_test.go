package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// Issue #17, policies in shadow mode: a policy with mode = "shadow" is
// evaluated on every action and journalled, never enforced; the summary,
// runs show and symbi policy shadow count where it disagreed; every
// decision records the policy's version, whether it was an engine error,
// and its place in the evaluation order.

const shadowConfig = `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "calculator" {
  description = "Evaluate arithmetic"
  builtin     = "calculator"
}

# What is enforced: the calculator and the answer.
policy "open" {
  rules {
    allow = ["calculator", "respond"]
  }
}

# Being watched: it would deny everything.
policy "strict" {
  mode = "shadow"
  rules {
    deny = ["*", "respond"]
  }
}

# Being watched too, and broken: a strict built-in error on every action,
# which is an engine error mapped to deny, not a decision.
policy "broken" {
  mode = "shadow"
  opa {
    modules = ["broken.rego"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.strict, policy.open, policy.broken]
}
`

const brokenRego = `package symbi.gate

decision := {"decision": "allow"} if {
	to_number("not a number") > 0
}
`

const shadowScript = `{"turns": [
  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1+1"}}, {"id": "c2", "name": "calculator", "arguments": {"expression": "2+2"}}]},
  {"tool_calls": [{"id": "c3", "name": "calculator", "arguments": {"expression": "3+3"}}]},
  {"content": "2, 4 and 6."}
], "on_exhausted": "repeat_last"}`

// TestShadowPolicyWatchesWithoutEnforcing: the shadow policy that would
// deny everything changes nothing (every call runs, the run completes),
// and its disagreements are counted in the summary, runs show and symbi
// policy shadow over two runs; the journal records each decision's
// version, engine error and order.
func TestShadowPolicyWatchesWithoutEnforcing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", shadowConfig)
	writeFile(t, dir, "broken.rego", brokenRego)
	writeFile(t, dir, "script.json", shadowScript)
	state := filepath.Join(t.TempDir(), "state")

	r := symbi(t, call{dir: dir}, "run", "--state-dir", state, ".", "add")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "2, 4 and 6." {
		t.Fatalf("a run watched by a shadow policy that denies everything must complete:\n%s", r)
	}
	const want = "shadow: policy.strict would have denied 4 of 4 actions"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("the summary does not say %q:\n%s", want, r.stderr)
	}
	if !strings.Contains(r.stderr, "shadow: policy.broken would have denied 4 of 4 actions; 4 engine errors") {
		t.Errorf("the summary does not count the broken policy's engine errors:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, `◌ shadow policy.strict would deny calculator: tool_call "calculator" matches deny rule "*"`) {
		t.Errorf("the run's live lines do not show the disagreement:\n%s", r.stderr)
	}

	id := onlyRun(t, state)
	evs := readJournal(t, state, id)
	if n := len(eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)); n != 3 {
		t.Errorf("%d tool results, want 3: the shadow policy must not stop a call", n)
	}
	digest := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	var records []journal.GateRecord
	for _, pe := range eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated) {
		records = append(records, pe.Decisions...)
	}
	if len(records) != 4 {
		t.Fatalf("%d gate records, want 4 (3 calls and the answer)", len(records))
	}
	for _, rec := range records {
		if rec.Decision.Outcome != "allow" {
			t.Errorf("%s: enforced %s, want allow", rec.Action, rec.Decision.Outcome)
		}
		if len(rec.Trail) != 1 || rec.Trail[0].Policy != "policy.open" || rec.Trail[0].Order != 1 || !digest.MatchString(rec.Trail[0].Version) || rec.Trail[0].EngineError || rec.Trail[0].Shadow {
			t.Errorf("%s: trail %+v, want policy.open alone, order 1, a version, a real decision", rec.Action, rec.Trail)
		}
		if len(rec.Shadow) != 2 {
			t.Fatalf("%s: %d shadow decisions, want 2", rec.Action, len(rec.Shadow))
		}
		strict, broken := rec.Shadow[0], rec.Shadow[1]
		if strict.Policy != "policy.strict" || strict.Outcome != "deny" || !strict.Shadow || strict.Order != 2 || strict.EngineError || !digest.MatchString(strict.Version) {
			t.Errorf("%s: strict's decision %+v, want a shadow deny, order 2, a version, a real decision", rec.Action, strict)
		}
		if broken.Policy != "policy.broken" || broken.Outcome != "deny" || !broken.Shadow || broken.Order != 3 || !broken.EngineError || !strings.Contains(broken.Reason, "to_number") {
			t.Errorf("%s: broken's decision %+v, want a shadow deny, order 3, marked an engine error", rec.Action, broken)
		}
		if strict.Version == broken.Version || strict.Version == rec.Trail[0].Version {
			t.Errorf("policies share a version: %s", strict.Version)
		}
	}

	show := symbi(t, call{}, "runs", "show", id, "--state-dir", state)
	if show.code != 0 || !strings.Contains(show.stdout, want[len("shadow: "):]) || !strings.Contains(show.stdout, "[shadow policy.strict: deny]") {
		t.Errorf("runs show does not count the disagreements:\n%s", show)
	}

	// A second run, with the policy edited: symbi policy shadow adds
	// them up and names both versions.
	writeFile(t, dir, "main.hcl", strings.Replace(shadowConfig, `deny = ["*", "respond"]`, `deny = ["calculator"]`, 1))
	if r := symbi(t, call{dir: dir}, "run", "--state-dir", state, ".", "add"); r.code != 0 || !strings.Contains(r.stderr, "shadow: policy.strict would have denied 3 of 4 actions") {
		t.Fatalf("second run:\n%s", r)
	}
	sh := symbi(t, call{}, "policy", "shadow", "--all", "--state-dir", state)
	if sh.code != 0 || !strings.Contains(sh.stdout, "policy.strict would have denied 7 of 8 actions in 2 runs") {
		t.Fatalf("policy shadow over two runs:\n%s", sh)
	}
	if n := len(regexp.MustCompile(`(?m)^  version sha256:[0-9a-f]{64}$`).FindAllString(sh.stdout, -1)); n != 3 {
		t.Errorf("%d versions listed, want 3 (strict's two, broken's one):\n%s", n, sh.stdout)
	}
	if !strings.Contains(sh.stdout, `iter 1: calculator {"expression":"1+1"}: enforced allow, shadow deny: tool_call "calculator" matches deny rule`) {
		t.Errorf("policy shadow lists no disagreement:\n%s", sh.stdout)
	}
	js := symbi(t, call{}, "policy", "shadow", "--json", id, "--state-dir", state)
	var tally journal.ShadowTally
	if err := json.Unmarshal([]byte(strings.SplitN(js.stdout, "\n", 2)[0]), &tally); err != nil || tally.Policy != "policy.strict" || tally.WouldDeny != 4 || tally.Runs != 1 {
		t.Errorf("policy shadow --json: %+v %v\n%s", tally, err, js)
	}
	if r := symbi(t, call{}, "policy", "shadow", "--state-dir", state); r.code != 2 {
		t.Errorf("policy shadow without runs: want exit 2\n%s", r)
	}
}
