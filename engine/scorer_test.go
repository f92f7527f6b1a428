package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// scorerHCL is a best-of-N block of two candidates whose command scorer is
// score.sh (the test writes it), under policy.p.
func scorerHCL(rules string) string {
	return `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
policy "p" {
  rules {
    ` + rules + `
  }
}
agent "a" {
  model    = model.m
  policies = [policy.p]
}
best_of_n "answer" {
  agent           = agent.a
  candidates      = 2
  max_concurrency = 2
  scorer {
    effect = "none"
    command {
      argv = ["sh", "./score.sh"]
    }
  }
}
`
}

// A command scorer is a tool call named after its block with ".scorer",
// one per candidate, gated by the agent's policies, counted on the budget
// and journalled like any; it gets the candidate as JSON on stdin and the
// call's idempotency key in its environment. A denied scorer never runs
// and stops the block as policy_denial; a failing one fails its
// candidate's scoring.
func TestCommandScorerIsGated(t *testing.T) {
	const script = `{"turns": [{"content": "an answer"}], "on_exhausted": "repeat_last"}`
	run := func(t *testing.T, rules, score string) (*BestOfNResult, []journal.Event, string) {
		t.Helper()
		p, dir := fixture{"main.hcl": scorerHCL(rules), "script.json": script, "score.sh": score}.compile(t)
		e, _ := newEngine(t, p, dir, nil)
		res, err := e.BestOfN(context.Background(), "answer", "task", RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res, journalOf(t, e, res.RunID), dir
	}
	t.Run("allowed", func(t *testing.T) {
		res, evs, dir := run(t, `allow = ["best_of_n.answer.scorer"]`,
			`i=$(cat); n=$(printf '%s' "$i" | sed 's/.*"index":\([0-9]*\).*/\1/'); printf '%s' "$i" > "input$n.json"; printf '%s' "$SYMBI_IDEMPOTENCY_KEY" > "key$n.txt"; echo "0.$n"`)
		if res.Termination.Reason != Completed || res.Selected == nil || res.Selected.Index != 1 {
			t.Fatalf("termination %s, selected %+v, candidates %+v", res.Termination, res.Selected, res.Candidates)
		}
		if res.Usage.ToolCalls != 2 || res.Usage.ModelCalls != 2 {
			t.Errorf("usage %+v; want the two candidates' calls and two scorer tool calls", res.Usage)
		}
		keys := map[string]bool{}
		for n := range 2 {
			in, err := os.ReadFile(filepath.Join(dir, "input"+string(rune('0'+n))+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Index   int    `json:"index"`
				Task    string `json:"task"`
				Content string `json:"content"`
			}
			if err := json.Unmarshal(in, &got); err != nil || got.Index != n || got.Task != "task" || got.Content != "an answer" {
				t.Errorf("scorer %d read %s (%v)", n, in, err)
			}
			key, _ := os.ReadFile(filepath.Join(dir, "key"+string(rune('0'+n))+".txt"))
			if !strings.HasPrefix(string(key), res.RunID) || keys[string(key)] {
				t.Errorf("SYMBI_IDEMPOTENCY_KEY = %q, want a key of its own in run %s", key, res.RunID)
			}
			keys[string(key)] = true
		}
		count := map[string]int{}
		for _, ev := range evs {
			switch ev.Type {
			case journal.PolicyEvaluated:
				var gate journal.PolicyEvaluatedData
				_ = ev.Decode(&gate)
				if d := gate.Decisions; len(d) != 1 || d[0].Action.Tool != "best_of_n.answer.scorer" || d[0].Action.Effect != "none" || d[0].Decision.Outcome != "allow" {
					t.Errorf("gate %+v", gate)
				}
				count[ev.Type]++
			case journal.ToolsDispatched, journal.ToolResult, journal.CandidateScored:
				count[ev.Type]++
			}
		}
		if count[journal.PolicyEvaluated] != 2 || count[journal.ToolsDispatched] != 2 || count[journal.ToolResult] != 2 || count[journal.CandidateScored] != 2 {
			t.Errorf("journal counts %v; want each scorer call gated, dispatched and its result", count)
		}
	})
	t.Run("denied", func(t *testing.T) {
		res, _, dir := run(t, `allow = ["calculator"]`, `touch ran; echo 1`)
		var den *DenialError
		if res.Termination.Reason != PolicyDenial || !errors.As(res.Termination.Err, &den) || res.Answer != "" || res.Selected != nil {
			t.Errorf("termination %s (%v), answer %q", res.Termination, res.Termination.Err, res.Answer)
		}
		if !strings.Contains(res.Termination.Detail, "best_of_n.answer.scorer") {
			t.Errorf("detail %q does not name the scorer", res.Termination.Detail)
		}
		for _, c := range res.Candidates {
			if c.Status == StatusBudgetExceeded {
				t.Errorf("candidate %d: %s, but no budget ran out", c.Index, c.Status)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Error("a denied scorer ran")
		}
	})
	t.Run("failed", func(t *testing.T) {
		res, _, _ := run(t, `allow = ["best_of_n.answer.scorer"]`, `echo broken >&2; exit 3`)
		if res.Termination.Reason != Failed || res.Selected != nil {
			t.Errorf("termination %s: %s", res.Termination, res.Termination.Detail)
		}
		for _, c := range res.Candidates {
			if c.Status != StatusScoringFailed || c.Error == nil || !strings.Contains(c.Error.Error(), "command scorer best_of_n.answer.scorer") {
				t.Errorf("candidate %d: %s (%v)", c.Index, c.Status, c.Error)
			}
		}
	})
}

// A command scorer's tool name is reserved as a command selector's is: no
// MCP server's tool may pass for it in a policy.
func TestCommandScorerNameIsReserved(t *testing.T) {
	p, dir := fixture{"main.hcl": scorerHCL(`allow = ["best_of_n.answer.scorer"]`), "script.json": `{"turns": [{"content": "x"}]}`, "score.sh": "echo 1"}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	if names := e.planToolNames(); !slices.Contains(names, "best_of_n.answer.scorer") {
		t.Errorf("reserved tool names %v lack the command scorer's", names)
	}
}
