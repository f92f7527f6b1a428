package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// budgets12Model is a model block on the fake server, whose URL arrives as
// var.base_url.
const budgets12Model = `
variable "base_url" {
  type = string
}

model "m" {
  provider     = "openai"
  name         = "e2e-model"
  base_url     = var.base_url
  capabilities = ["tools", "streaming"]
  timeouts {
    total = "15s"
  }
}
`

// jsonSummary finds the summary line of `symbi run --json`.
func jsonSummary(t *testing.T, stdout string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event"] == "summary" {
			return m
		}
	}
	t.Fatalf("no summary line in:\n%s", stdout)
	return nil
}

// An answer whose own usage passes max_total_tokens arrived and was paid
// for: `symbi run` prints it on stdout, ends budget_exceeded naming the
// limit (exit 3), and --json's summary and the journal carry the same
// answer. Before, stdout had the answer but --json said "answer": "".
func TestAnswerPastTheLimitIsReportedWithIt(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		return fakeserver.Reply{Chunks: []string{"forty", "-two"}, Usage: &provider.Usage{PromptTokens: 90, CompletionTokens: 30, TotalTokens: 120}}
	}))
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", budgets12Model+`
budget "tight" {
  max_total_tokens = 100
}

agent "a" {
  model  = model.m
  budget = budget.tight
}
`)
	for _, jsonOut := range []bool{false, true} {
		state := filepath.Join(t.TempDir(), "state")
		args := []string{"run", "--state-dir", state, "--var", "base_url=" + srv.URL(), ".", "What is 6 * 7?"}
		if jsonOut {
			args = append(args, "--json")
		}
		r := symbi(t, call{dir: dir}, args...)
		if r.code != 3 {
			t.Errorf("exit %d, want 3 (stopped by a limit)\n%s", r.code, r)
		}
		if jsonOut {
			s := jsonSummary(t, r.stdout)
			term, _ := s["termination"].(map[string]any)
			if s["answer"] != "forty-two" || term["reason"] != "budget_exceeded" || term["limit"] != "max_total_tokens" {
				t.Errorf("--json summary %v", s)
			}
		} else {
			if strings.TrimSpace(r.stdout) != "forty-two" {
				t.Errorf("stdout %q, want the answer", r.stdout)
			}
			if !strings.Contains(r.stderr, "budget_exceeded (max_total_tokens)") {
				t.Errorf("stderr does not name the limit:\n%s", r.stderr)
			}
		}
		end := terminated(t, readJournal(t, state, onlyRun(t, state)))
		if end.Reason != "budget_exceeded" || end.Limit != "max_total_tokens" || end.Answer != "forty-two" || end.Usage.TotalTokens != 120 {
			t.Errorf("terminated %+v", end)
		}
	}
}

// max_plan_steps is a budget limit: a plan_execute run whose model keeps
// planning more steps than the budget allows exits 3, budget_exceeded
// naming max_plan_steps, with no step run. Before, it exited 4 with
// "plan: too_many_steps".
func TestMaxPlanStepsExitsAsABudgetLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", `
model "offline" {
  provider = "scripted"
  script   = "plan.json"
}

budget "b" {
  max_plan_steps = 2
}

agent "planner" {
  model  = model.offline
  budget = budget.b
  loop {
    mode = "plan_execute"
  }
}
`)
	writeFile(t, dir, "plan.json", `{"turns": [{"content": "{\"steps\": [{\"id\": \"a\", \"task\": \"A\"}, {\"id\": \"b\", \"task\": \"B\"}, {\"id\": \"c\", \"task\": \"C\"}]}"}], "on_exhausted": "repeat_last"}`)
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--state-dir", state, ".", "do it")
	if r.code != 3 || !strings.Contains(r.stderr, "budget_exceeded (max_plan_steps)") {
		t.Errorf("exit %d, want 3 naming max_plan_steps\n%s", r.code, r)
	}
	evs := readJournal(t, state, onlyRun(t, state))
	if end := terminated(t, evs); end.Reason != "budget_exceeded" || end.Limit != "max_plan_steps" {
		t.Errorf("terminated %+v", end)
	}
	for _, ev := range evs {
		if ev.Type == journal.StepStarted {
			t.Errorf("a step started: %v", eventTypes(evs))
			break
		}
	}
}
