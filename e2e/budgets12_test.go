package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// selectorConfig is a best-of-N block of three candidates (temperatures 0,
// 1, 2, each with its own scripted answer) whose command selector is
// pick.sh, under a rules policy with the given allow list.
func selectorConfig(t *testing.T, allow string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", `
model "offline" {
  provider = "scripted"
  script   = "answers.json"
}

policy "rules" {
  rules {
    allow = [`+allow+`]
  }
}

agent "writer" {
  model    = model.offline
  policies = [policy.rules]
}

best_of_n "answer" {
  agent      = agent.writer
  candidates = 3
  vary {
    temperature = candidate.index
  }
  scorer {
    expr = 1
  }
  selector {
    kind   = "command"
    effect = "read"
    command {
      argv = ["sh", "./pick.sh"]
    }
  }
}
`)
	writeFile(t, dir, "answers.json", `{"turns": [
  {"when_temperature": 0, "content": "zero"},
  {"when_temperature": 1, "content": "one"},
  {"when_temperature": 2, "content": "two"}
]}`)
	// The selector records what it was given, its idempotency key and its
	// process group (field 5 of /proc/self/stat), then chooses candidate 1.
	writeFile(t, dir, "pick.sh", `cat > input.json
printf '%s' "$SYMBI_IDEMPOTENCY_KEY" > key.txt
[ -r /proc/$$/stat ] && { set -- $(cat /proc/$$/stat); echo "$1 $5" > group.txt; }
echo '{"index": 1, "reason": "one reads best"}'
`)
	return dir
}

// A best-of-N command selector through the binary: its call is gated by the
// agent's rules under the block's name, it runs in its own process group
// with the call's idempotency key, the candidate it prints is the answer on
// stdout, and `symbi runs show` shows the call and the choice. Where no
// policy allows it, nothing is selected and the run exits 3 (policy_denial).
func TestCommandSelectorThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := selectorConfig(t, `"best_of_n.answer"`)
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--best-of", "answer", "--state-dir", state, ".", "Which?")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "one" {
		t.Fatalf("want exit 0 and the answer of candidate 1\n%s", r)
	}
	if !strings.Contains(r.stderr, "best_of_n.answer") {
		t.Errorf("stderr does not show the selector's call:\n%s", r.stderr)
	}
	id := onlyRun(t, state)
	evs := readJournal(t, state, id)
	in, err := os.ReadFile(filepath.Join(dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Candidates []struct {
			Index   int    `json:"index"`
			Content string `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(in, &got); err != nil || len(got.Candidates) != 3 || got.Candidates[1].Content != "one" {
		t.Errorf("the selector read %s (%v)", in, err)
	}
	if key, _ := os.ReadFile(filepath.Join(dir, "key.txt")); !strings.HasPrefix(string(key), id) {
		t.Errorf("SYMBI_IDEMPOTENCY_KEY %q is not a key of run %s", key, id)
	}
	if g, err := os.ReadFile(filepath.Join(dir, "group.txt")); err == nil {
		if f := strings.Fields(string(g)); len(f) != 2 || f[0] != f[1] {
			t.Errorf("pid and process group %q: the selector does not lead its own group", g)
		}
	}
	sel := eventsOf[journal.CandidateSelectedData](t, evs, journal.CandidateSelected)
	if len(sel) != 1 || sel[0].Index != 1 || sel[0].Selector != "command" || sel[0].Reason != "one reads best" {
		t.Errorf("candidate_selected %+v", sel)
	}
	if end := terminated(t, evs); end.Answer != "one" || end.Usage.ToolCalls != 1 {
		t.Errorf("terminated %+v", end)
	}
	show := symbi(t, call{dir: dir}, "runs", "show", id, "--state-dir", state)
	for _, want := range []string{"tools_dispatched", "best_of_n.answer", "candidate_selected"} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("runs show does not have %q:\n%s", want, show.stdout)
		}
	}

	denied := selectorConfig(t, `"calculator"`)
	state = filepath.Join(t.TempDir(), "state")
	r = symbi(t, call{dir: denied}, "run", "--best-of", "answer", "--state-dir", state, ".", "Which?")
	if r.code != 3 || strings.TrimSpace(r.stdout) != "" || !strings.Contains(r.stderr, "policy_denial") {
		t.Errorf("a selector no policy allows: want exit 3, policy_denial, no answer\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(denied, "input.json")); err == nil {
		t.Error("the denied selector ran")
	}
}

// The usage reserved and not settled is reported beside the accounted
// usage: `symbi runs show` of a run killed while its model call was in
// flight says what that call holds (the estimate a resume charges), and
// --json's summary always carries "reserved" beside "usage".
func TestReservedBesideTheUsage(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithLatency(time.Minute))
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", budgets12Model+`
agent "a" {
  model = model.m
}
`)
	state := filepath.Join(t.TempDir(), "state")
	p := start(t, call{dir: dir}, "run", "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "slow question")
	deadline := time.Now().Add(hangLimit)
	var id string
	for {
		if runs, _ := journal.ListRuns(state); len(runs) == 1 {
			id = runs[0].ID
			if evs, _ := journal.ReadFile(journal.Path(state, id)); len(evs) > 0 && evs[len(evs)-1].Type == journal.ModelCallStarted && len(srv.Requests()) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started its model call")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.cmd.Process.Kill()
	p.wait(t)
	show := symbi(t, call{dir: dir}, "runs", "show", id, "--state-dir", state)
	head, _, _ := strings.Cut(show.stdout, "\n")
	if show.code != 0 || !strings.Contains(head, "incomplete") || !strings.Contains(head, "reserved 1 model call") || !strings.Contains(head, "by the call in flight") {
		t.Errorf("runs show's summary line %q does not report the call in flight\n%s", head, show)
	}

	fast := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		return fakeserver.Reply{Content: "quick answer"}
	}))
	r := symbi(t, call{dir: dir}, "run", "--json", "--state-dir", filepath.Join(t.TempDir(), "state"), "--var", "base_url="+fast.URL(), ".", "quick question")
	s := jsonSummary(t, r.stdout)
	if _, ok := s["reserved"].(map[string]any); !ok || r.code != 0 {
		t.Errorf("exit %d, --json summary %v: no reserved beside usage", r.code, s)
	}
}

// A best-of-N block's aggregate budget shares max_iterations with its
// candidates: two candidates of two iterations each under max_iterations =
// 3 run three in all, the second stopped at the one left. Before, each ran
// under its agent's budget alone and the aggregate limit was never read.
func TestBestOfNSharesMaxIterations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", `
model "offline" {
  provider = "scripted"
  script   = "turns.json"
}

tool "calculator" {
  description = "arithmetic"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "a" {
  model    = model.offline
  tools    = [tool.calculator]
  policies = [policy.rules]
}

budget "agg" {
  max_iterations = 3
}

best_of_n "answer" {
  agent           = agent.a
  candidates      = 2
  max_concurrency = 1
  side_effects    = "allow"
  budget          = budget.agg
  estimate {
    total_tokens_per_candidate = 100
  }
  scorer {
    expr = 1
  }
}
`)
	writeFile(t, dir, "turns.json", `{"turns": [
  {"when": "^task$", "tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
  {"when": "^2$", "content": "two"}
], "on_exhausted": "repeat_last"}`)
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--best-of", "answer", "--state-dir", state, ".", "task")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "two" {
		t.Fatalf("want exit 0 and candidate 0's answer\n%s", r)
	}
	evs := readJournal(t, state, onlyRun(t, state))
	var statuses []string
	for _, c := range eventsOf[journal.CandidateFinishedData](t, evs, journal.CandidateFinished) {
		statuses = append(statuses, c.Status)
	}
	if strings.Join(statuses, " ") != "eligible budget_exceeded" {
		t.Errorf("candidates %v; want the second stopped at the iteration left", statuses)
	}
	if end := terminated(t, evs); end.Iterations != 3 {
		t.Errorf("%d iterations under an aggregate max_iterations of 3", end.Iterations)
	}
}
