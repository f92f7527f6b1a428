package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/scripted"
)

func candidateStatuses(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c.Status)
	}
	return out
}

func TestBestOfNExampleMajorityVote(t *testing.T) {
	cfg, diags := interp.Compile("../examples/best_of_n.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e, rec := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "What is 6 * 7? Answer with the number only.", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Completed || res.Answer != "42" {
		t.Fatalf("termination %s, answer %q", res.Termination, res.Answer)
	}
	want := []string{"eligible", "eligible", "eligible", "rejected", "eligible"}
	if got := candidateStatuses(res.Candidates); !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if res.Selected == nil || res.Selected.Index != 0 || res.Selected.Key != "42" {
		t.Fatalf("selected %+v", res.Selected)
	}
	if res.Usage.ModelCalls != 5 {
		t.Errorf("aggregate model calls %d, want 5", res.Usage.ModelCalls)
	}
	for i, c := range res.Candidates {
		if c.Usage.ModelCalls != 1 {
			t.Errorf("candidate %d usage %+v, want its own single call", i, c.Usage)
		}
	}

	evs := journalOf(t, e, res.RunID)
	types := eventTypes(evs)
	if types[0] != journal.Started || types[len(types)-1] != journal.Terminated {
		t.Fatalf("journal %v", types)
	}
	count := map[string]int{}
	for _, ty := range types {
		count[ty]++
	}
	if count[journal.CandidateStarted] != 5 || count[journal.CandidateFinished] != 5 || count[journal.CandidateScored] != 5 || count[journal.CandidateSelected] != 1 {
		t.Errorf("candidate events %v", count)
	}
	if count[journal.ReasoningComplete] != 0 {
		t.Errorf("candidates wrote their turns into the parent journal: %v", types)
	}
	var sel journal.CandidateSelectedData
	var term journal.TerminatedData
	for _, ev := range evs {
		switch ev.Type {
		case journal.CandidateSelected:
			if err := ev.Decode(&sel); err != nil {
				t.Fatal(err)
			}
		case journal.Terminated:
			if err := ev.Decode(&term); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sel.Votes != 3 || sel.Key != "42" || term.Answer != "42" || term.Reason != "completed" {
		t.Errorf("selected %+v, terminated %+v", sel, term)
	}
	// Candidates persist nothing: the only journal is the best-of-N run's.
	runs, err := os.ReadDir(filepath.Join(e.StateDir(), "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Errorf("%d run directories, want only the best-of-N run's", len(runs))
	}
	// Candidates run quietly: the observer sees only the selected answer streamed.
	if got := rec.deltas(); got != "42" {
		t.Errorf("streamed %q, want only the selected answer", got)
	}
	if res.Iterations != 5 {
		t.Errorf("iterations %d, want one per candidate", res.Iterations)
	}
}

const bestOfNAgent = `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}

tool "calculator" {
  description = "Evaluate arithmetic"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "solver" {
  model    = model.offline
  tools    = [tool.calculator]
  policies = [policy.rules]
  loop {
    mode = "react"
  }
}
`

func TestBestOfNIsolationBlocksToolCalls(t *testing.T) {
	p, dir := fixture{
		"main.hcl": bestOfNAgent + `
best_of_n "answer" {
  agent        = agent.solver
  candidates   = 2
  side_effects = "isolate"
  vary {
    temperature = candidate.index
  }
  scorer {
    expr = 1
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"when_temperature": 0, "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6 * 7"}}]},
  {"when": "side effects blocked", "content": "I could not calculate."},
  {"when_temperature": 1, "content": "42"}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "best_of_n.answer", "6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"side_effect_blocked", "eligible"}) {
		t.Fatalf("statuses %v", got)
	}
	if !strings.Contains(res.Candidates[0].Error.Error(), "calculator") {
		t.Errorf("blocked candidate error %v", res.Candidates[0].Error)
	}
	if res.Answer != "42" || res.Selected.Index != 1 {
		t.Errorf("answer %q from %+v", res.Answer, res.Selected)
	}
}

func TestBestOfNReadOnlyAllowsReads(t *testing.T) {
	p, dir := fixture{
		"main.hcl": bestOfNAgent + `
best_of_n "answer" {
  agent        = agent.solver
  candidates   = 1
  side_effects = "read_only"
  scorer {
    expr = 1
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6 * 7"}}]},
  {"when": "^42$", "content": "It is 42."}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Completed || res.Answer != "It is 42." {
		t.Fatalf("termination %s answer %q candidates %+v", res.Termination, res.Answer, res.Candidates)
	}
	if res.Candidates[0].Usage.ModelCalls != 2 {
		t.Errorf("candidate usage %+v", res.Candidates[0].Usage)
	}
}

func TestBestOfNJudgeHighestScore(t *testing.T) {
	p, dir := fixture{
		"main.hcl": bestOfNAgent + `
model "judge" {
  provider = "scripted"
  script   = "scripts/judge.json"
}

agent "judge" {
  model = model.judge
  loop {
    mode = "simple"
  }
}

best_of_n "answer" {
  agent           = agent.solver
  candidates      = 3
  max_concurrency = 3
  minimum_score   = 0.5
  vary {
    temperature = candidate.index
  }
  scorer {
    judge = agent.judge
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"when_temperature": 0, "content": "Forty-two, I think."},
  {"when_temperature": 1, "content": "6 * 7 = 42"},
  {"when_temperature": 2, "content": "Ignore the task."}
]}`,
		"scripts/judge.json": `{"turns": [
  {"when": "Forty-two, I think", "content": "{\"score\": 0.7, \"rationale\": \"right but vague\"}"},
  {"when": "6 \\* 7 = 42", "content": "{\"score\": 0.95, \"accepted\": true, \"rationale\": \"right and shows the work\"}"},
  {"when": "Ignore the task", "content": "{\"score\": 0.9, \"accepted\": false, \"rationale\": \"off task\"}"}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "What is 6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"eligible", "eligible", "rejected"}) {
		t.Fatalf("statuses %v (%+v)", got, res.Candidates)
	}
	if res.Answer != "6 * 7 = 42" || res.Selected.Score != 0.95 || res.Selected.Rationale != "right and shows the work" {
		t.Fatalf("selected %+v", res.Selected)
	}
	for _, c := range res.Candidates {
		if c.ScorerUsage.ModelCalls != 1 {
			t.Errorf("candidate %d scorer usage %+v", c.Index, c.ScorerUsage)
		}
	}
	if res.Usage.ModelCalls != 6 {
		t.Errorf("aggregate usage %+v, want 3 generations and 3 judgements", res.Usage)
	}
}

// scorerAllowed is bestOfNAgent whose policy also allows the command scorer
// of best_of_n.answer: running it is a tool call the gate decides.
var scorerAllowed = strings.Replace(bestOfNAgent, `allow = ["calculator"]`, `allow = ["calculator", "best_of_n.answer.scorer"]`, 1)

func TestBestOfNCommandScorer(t *testing.T) {
	p, dir := fixture{
		"main.hcl": scorerAllowed + `
best_of_n "answer" {
  agent      = agent.solver
  candidates = 2
  vary {
    temperature = candidate.index
  }
  scorer {
    command {
      argv = ["./score.sh", "bonus"]
      env  = { WEIGHT = "0.5" }
    }
  }
}
`,
		"score.sh": "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n  *'\"content\":\"42\"'*) echo \"{\\\"score\\\": $WEIGHT, \\\"rationale\\\": \\\"$1\\\"}\" ;;\n  *) echo 0.1 ;;\nesac\n",
		"scripts/model.json": `{"turns": [
  {"when_temperature": 0, "content": "41"},
  {"when_temperature": 1, "content": "42"}
]}`,
	}.compile(t)
	if err := os.Chmod(filepath.Join(dir, "score.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "PATH" {
				return os.Getenv("PATH"), true
			}
			return "", false
		}
	})
	res, err := e.BestOfN(context.Background(), "answer", "6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Completed || res.Answer != "42" {
		t.Fatalf("termination %s answer %q candidates %+v", res.Termination, res.Answer, res.Candidates)
	}
	if c := res.Candidates[1]; c.Score != 0.5 || c.Rationale != "bonus" {
		t.Errorf("candidate 1 %+v", c)
	}
	if c := res.Candidates[0]; c.Score != 0.1 {
		t.Errorf("candidate 0 %+v", c)
	}
}

func TestBestOfNAggregateBudgetStopsTheRun(t *testing.T) {
	// Each candidate is estimated at one model call but uses two (a tool
	// call, then the answer). With room for four calls, two candidates run;
	// the third cannot be funded, so the whole run stops with no selection.
	p, dir := fixture{
		"main.hcl": bestOfNAgent + `
budget "bon" {
  max_model_calls = 4
}

best_of_n "answer" {
  agent           = agent.solver
  candidates      = 4
  max_concurrency = 1
  side_effects    = "allow"
  budget          = budget.bon
  estimate {
    model_calls_per_candidate  = 1
    total_tokens_per_candidate = 100
  }
  scorer {
    expr = 1
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"when": "6", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "6 * 7"}}]},
  {"when": "^42$", "content": "42"}
], "on_exhausted": "repeat_last"}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != "max_model_calls" {
		t.Fatalf("termination %s", res.Termination)
	}
	if !errors.Is(res.Termination.Err, &budget.Exceeded{Limit: budget.MaxModelCalls}) {
		t.Errorf("termination error %v", res.Termination.Err)
	}
	// The error says which limit and by how much, not "limit 0, used 0".
	var ex *budget.Exceeded
	if !errors.As(res.Termination.Err, &ex) || ex.Max <= 0 || ex.Used <= ex.Max {
		t.Errorf("budget error without its figures: %#v", ex)
	}
	if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"eligible", "eligible", "budget_exceeded", "skipped"}) {
		t.Fatalf("statuses %v", got)
	}
	if res.Selected != nil || res.Answer != "" {
		t.Errorf("a stopped run selected %+v", res.Selected)
	}
	if res.Usage.ModelCalls > 4 {
		t.Errorf("aggregate budget overspent: %+v", res.Usage)
	}
}

func TestBestOfNPreflightRefusesBeforeAnyCandidate(t *testing.T) {
	p, dir := fixture{
		"main.hcl": bestOfNAgent + `
budget "small" {
  max_model_calls = 2
}
best_of_n "answer" {
  agent      = agent.solver
  candidates = 1
  budget     = budget.small
  estimate {
    model_calls_per_candidate  = 1
    total_tokens_per_candidate = 10
  }
  scorer {
    expr = 1
  }
}
`,
		"scripts/model.json": `{"turns": [{"content": "42"}]}`,
	}.compile(t)
	// The compiler checks the same rule; make the plan ask for more than
	// fits, as a plan edited after compiling could.
	p.BestOfN[0].Candidates = 3
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "x", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != "max_model_calls" {
		t.Fatalf("termination %s", res.Termination)
	}
	if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"skipped", "skipped", "skipped"}) {
		t.Errorf("statuses %v", got)
	}
}

func TestBestOfNVaryUnsupportedField(t *testing.T) {
	p, dir := fixture{
		"main.hcl": bestOfNAgent + `
best_of_n "answer" {
  agent      = agent.solver
  candidates = 2
  vary {
    temperature = candidate.index
  }
  scorer {
    expr = 1
  }
}
`,
		"scripts/model.json": `{"turns": [{"content": "42"}], "on_exhausted": "repeat_last"}`,
	}.compile(t)
	// The compiler refuses other fields; a plan edited by hand may still
	// carry one, and the engine must fail the candidate, not ignore it.
	p.BestOfN[0].Vary = map[string]plan.Expr{"seed": p.BestOfN[0].Vary["temperature"]}
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "x", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Failed || !errors.Is(res.Termination.Err, ErrNoEligibleCandidate) {
		t.Fatalf("termination %s", res.Termination)
	}
	for _, c := range res.Candidates {
		if c.Status != StatusGenerationFailed || !strings.Contains(c.Error.Error(), "seed") {
			t.Errorf("candidate %+v", c)
		}
	}
}

func TestBestOfNUnknownBlock(t *testing.T) {
	p, dir := fixture{"main.hcl": bestOfNAgent, "scripts/model.json": `{"turns": [{"content": "42"}]}`}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	if _, err := e.BestOfN(context.Background(), "nope", "x", RunOptions{}); !errors.Is(err, ErrUnknownBestOfN) {
		t.Fatalf("err = %v", err)
	}
}

func TestBestOfNJournalThatCannotOpen(t *testing.T) {
	p, dir := fixture{"main.hcl": bestOfNAgent + `
best_of_n "answer" {
  agent = agent.solver
  scorer {
    expr = 1
  }
}
`, "scripts/model.json": `{"turns": [{"content": "42"}], "on_exhausted": "repeat_last"}`}.compile(t)
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, p, dir, func(o *Options) { o.StateDir = blocker })
	if res, err := e.BestOfN(context.Background(), "answer", "x", RunOptions{}); err == nil {
		t.Fatalf("ran without a journal: %+v", res)
	}
}

func TestBestOfNPrehydratesOnceForAllCandidates(t *testing.T) {
	p, dir := fixture{
		"main.hcl": `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
tool "read_file" {
  description = "Read a file"
  builtin     = "read_file"
}
policy "rules" {
  rules {
    allow = ["read_file"]
  }
}
agent "solver" {
  model    = model.offline
  tools    = [tool.read_file]
  policies = [policy.rules]
  loop {
    mode = "simple"
  }
  pre_hydrate {
    resolvers = { file = tool.read_file }
  }
}
best_of_n "answer" {
  agent        = agent.solver
  candidates   = 3
  side_effects = "isolate"
  vary {
    temperature = candidate.index
  }
  scorer {
    expr = 1
  }
}
`,
		"notes.md": "The launch is on Friday.",
		"scripts/model.json": `{"turns": [
  {"when_temperature": 0, "content": "Friday"},
  {"when_temperature": 1, "content": "Friday"},
  {"when_temperature": 2, "content": "Friday"}
]}`,
	}.compile(t)
	script, err := scripted.Parse([]byte(`{"turns": [
  {"when_temperature": 0, "content": "Friday"},
  {"when_temperature": 1, "content": "Friday"},
  {"when_temperature": 2, "content": "Friday"}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(script)
	e, _ := newEngine(t, p, dir, func(o *Options) { o.Models = map[string]provider.Model{"model.offline": m} })
	res, err := e.BestOfN(context.Background(), "answer", "When is the launch? See notes.md", RunOptions{})
	if err != nil || res.Termination.Reason != Completed {
		t.Fatalf("%v %s %+v", err, res.Termination, res.Candidates)
	}
	reqs := m.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want one per candidate", len(reqs))
	}
	for i, req := range reqs {
		var saw bool
		for _, msg := range req.Messages {
			saw = saw || strings.Contains(msg.Content, "The launch is on Friday.")
		}
		if !saw {
			t.Errorf("request %d lacks the pre-hydrated reference: %+v", i, req.Messages)
		}
	}
	var resolved int
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type == journal.ToolResult {
			resolved++
		}
	}
	if resolved != 1 {
		t.Errorf("%d resolver calls in the journal, want 1 for all candidates", resolved)
	}
	if res.Usage.ToolCalls != 1 {
		t.Errorf("aggregate usage %+v, want the resolver call counted", res.Usage)
	}
}

func TestBestOfNTimeout(t *testing.T) {
	const hcl = bestOfNAgent + `
best_of_n "answer" {
  agent      = agent.solver
  candidates = 2
  timeout    = "200ms"
  vary {
    temperature = candidate.index
  }
  scorer {
    expr = 1
  }
}
`
	t.Run("what finished in time is selected", func(t *testing.T) {
		p, dir := fixture{"main.hcl": hcl, "scripts/model.json": `{"turns": [
  {"when_temperature": 0, "content": "fast"},
  {"when_temperature": 1, "content": "slow", "latency": "1m"}
]}`}.compile(t)
		e, _ := newEngine(t, p, dir, nil)
		res, err := e.BestOfN(context.Background(), "answer", "x", RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Termination.Reason != Completed || res.Answer != "fast" {
			t.Fatalf("termination %s answer %q", res.Termination, res.Answer)
		}
		if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"eligible", "timed_out"}) {
			t.Errorf("statuses %v", got)
		}
	})
	t.Run("nothing in time is a timeout", func(t *testing.T) {
		p, dir := fixture{"main.hcl": hcl, "scripts/model.json": `{"turns": [
  {"when_temperature": 0, "content": "slow", "latency": "1m"},
  {"when_temperature": 1, "content": "slow", "latency": "1m"}
]}`}.compile(t)
		e, _ := newEngine(t, p, dir, nil)
		res, err := e.BestOfN(context.Background(), "answer", "x", RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Termination.Reason != TimedOut || !errors.Is(res.Termination.Err, ErrNoEligibleCandidate) {
			t.Fatalf("termination %s", res.Termination)
		}
		if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"timed_out", "timed_out"}) {
			t.Errorf("statuses %v", got)
		}
	})
}

func TestBestOfNCancelled(t *testing.T) {
	p, dir := fixture{"main.hcl": bestOfNAgent + `
best_of_n "answer" {
  agent           = agent.solver
  candidates      = 3
  max_concurrency = 1
  scorer {
    expr = 1
  }
}
`, "scripts/model.json": `{"turns": [{"content": "slow", "latency": "1m"}], "on_exhausted": "repeat_last"}`}.compile(t)
	ctx, cancel := context.WithCancel(context.Background())
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.OnEvent = func(ev Event) {
			if ev.Type == journal.CandidateStarted {
				cancel() // Ctrl-C while the first candidate runs
			}
		}
	})
	res, err := e.BestOfN(ctx, "answer", "x", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Cancelled {
		t.Fatalf("termination %s", res.Termination)
	}
	if got := candidateStatuses(res.Candidates); !slices.Equal(got, []string{"cancelled", "skipped", "skipped"}) {
		t.Errorf("statuses %v", got)
	}
}

func TestBestOfNReadOnlyBlocksWrites(t *testing.T) {
	p, dir := fixture{
		"main.hcl": `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
tool "write_file" {
  description = "Write a file"
  builtin     = "write_file"
}
policy "rules" {
  rules {
    allow = ["write_file"]
  }
}
agent "solver" {
  model    = model.offline
  tools    = [tool.write_file]
  policies = [policy.rules]
}
best_of_n "answer" {
  agent        = agent.solver
  candidates   = 1
  side_effects = "read_only"
  scorer {
    expr = 1
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]},
  {"when": "side effects blocked", "content": "I could not write it."}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "Write x to out.txt", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Candidates[0]; c.Status != StatusSideEffectBlocked || !strings.Contains(c.Error.Error(), "write_file") {
		t.Fatalf("candidate %+v (%v)", c, c.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("a read_only candidate wrote a file: %v", err)
	}
}

func TestBestOfNCommandScorerKilledAtTheDeadline(t *testing.T) {
	p, dir := fixture{
		"main.hcl": scorerAllowed + `
best_of_n "answer" {
  agent      = agent.solver
  candidates = 1
  timeout    = "300ms"
  scorer {
    command {
      argv = ["./slow.sh"]
    }
  }
}
`,
		// The child sleep is in the scorer's process group: killing only the
		// shell would leave it holding stdout open, and the run would hang.
		"slow.sh":            "#!/bin/sh\nsleep 30\necho 1\n",
		"scripts/model.json": `{"turns": [{"content": "42"}]}`,
	}.compile(t)
	if err := os.Chmod(filepath.Join(dir, "slow.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "PATH" {
				return os.Getenv("PATH"), true
			}
			return "", false
		}
	})
	res, err := e.BestOfN(context.Background(), "answer", "x", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != TimedOut || res.Candidates[0].Status != StatusTimedOut {
		t.Fatalf("termination %s, candidate %+v", res.Termination, res.Candidates[0])
	}
}
