package temporal

import (
	"cmp"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// localBestOfN runs a best_of_n block on the local engine and returns its
// result and its own events (deltas and the candidates' runs left out: a
// local run's journal holds neither).
func localBestOfN(t testing.TB, p *plan.Plan, base, addr, input string) (*engine.BestOfNResult, []engine.Event) {
	t.Helper()
	var evs []engine.Event
	e, err := engine.New(p, engine.Options{BaseDir: base, StateDir: t.TempDir(), OnEvent: func(ev engine.Event) {
		if ev.Type != engine.ContentDelta && ev.Type != engine.ReasoningDelta {
			evs = append(evs, ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.BestOfN(context.Background(), addr, input, engine.RunOptions{NoJournal: true})
	if err != nil {
		t.Fatal(err)
	}
	return res, ownEvents(evs, res.RunID)
}

func ownEvents(evs []engine.Event, run string) []engine.Event {
	return slices.DeleteFunc(slices.Clone(evs), func(ev engine.Event) bool { return ev.RunID != run })
}

// bestOfNMatches runs a best_of_n block locally and as a workflow whose
// candidates are child workflows, and fails unless both end alike with the
// same timeline (every candidate's status, score and usage included).
func bestOfNMatches(t *testing.T, path, addr, input string) (contract.Output, []engine.Event) {
	return bestOfNMatchesBy(t, path, addr, input, candidateTimeline)
}

// unordered is a timeline as a sorted list: for a block whose candidates'
// command scorers run side by side, the local engine journals the scorers'
// calls as they happen and the candidates' events through their writer,
// so the order is not one two runs share; the events are.
func unordered(t testing.TB, evs []engine.Event) []string {
	out := candidateTimeline(t, evs)
	slices.Sort(out)
	return out
}

func bestOfNMatchesBy(t *testing.T, path, addr, input string, timeline func(testing.TB, []engine.Event) []string) (contract.Output, []engine.Event) {
	t.Helper()
	p, base := compile(t, path)
	want, wantEvs := localBestOfN(t, p, base, addr, input)
	te, acts := env(t, base)
	in := start(t, acts, p, p.BestOfNByAddress(addr).Agent, input)
	in.BestOfN = addr
	var children []string
	te.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		children = append(children, info.WorkflowType.Name+" "+info.WorkflowExecution.ID)
	})
	te.ExecuteWorkflow(contract.Workflow, in)
	got, gotEvs := outcome(t, te)
	gotEvs = ownEvents(gotEvs, got.RunID)
	if got.Answer != want.Answer || got.Termination.Reason != string(want.Termination.Reason) || got.Usage != want.Usage || got.Iterations != want.Iterations {
		t.Errorf("workflow: %q %s %+v %d iterations\nlocal:    %q %s %+v %d iterations",
			got.Answer, got.Termination.Reason, got.Usage, got.Iterations, want.Answer, want.Termination.Reason, want.Usage, want.Iterations)
	}
	if a, b := timeline(t, wantEvs), timeline(t, gotEvs); !slices.Equal(a, b) {
		t.Errorf("timelines differ:\nlocal:\n%s\nworkflow:\n%s", join(a), join(b))
	}
	if got.Mode != "best_of_n" {
		t.Errorf("mode %q", got.Mode)
	}
	// Every candidate that started ran as a child workflow, RUN.cN.
	var wantChildren []string
	for _, c := range want.Candidates {
		if c.Status != engine.StatusSkipped && !(c.Status == engine.StatusBudgetExceeded && c.Usage == (budget.Amount{})) {
			wantChildren = append(wantChildren, contract.CandidateWorkflow+" "+got.RunID+".c"+strconv.Itoa(c.Index))
		}
	}
	slices.Sort(children)
	if !slices.Equal(children, wantChildren) {
		t.Errorf("child workflows %q, want %q", children, wantChildren)
	}
	return got, gotEvs
}

func TestBestOfNVoteMatchesLocal(t *testing.T) {
	got, evs := bestOfNMatches(t, "../examples/best_of_n.hcl", "best_of_n.answer", "What is 6 * 7? Answer with the number only.")
	if got.Answer != "42" || got.Termination.Reason != "completed" {
		t.Errorf("%q %s", got.Answer, got.Termination.Reason)
	}
	if n := count(evs, "candidate_finished"); n != 5 {
		t.Errorf("%d candidate_finished events, want 5", n)
	}
}

func TestBestOfNCommandSelectorMatchesLocal(t *testing.T) {
	got, evs := bestOfNMatches(t, "../examples/best_of_n_selector.hcl", "best_of_n.concise", "What is 6 * 7?")
	if got.Answer != "42." || count(evs, "tool_result") != 1 {
		t.Errorf("%q, %d tool results", got.Answer, count(evs, "tool_result"))
	}
}

// elapsedArg is a candidate's elapsed seconds in a command's arguments.
var elapsedArg = regexp.MustCompile(`"elapsed":[0-9.e-]+,`)

// candidateTimeline is timeline with the candidates' own events in index
// order: candidates run side by side, so locally their events interleave
// differently from one run to the next, and a candidate's time taken is
// left out.
func candidateTimeline(t testing.TB, evs []engine.Event) []string {
	out := timeline(t, evs)
	for i := range out {
		out[i] = elapsedArg.ReplaceAllString(out[i], "")
	}
	isCandidate := func(l string) bool {
		return strings.HasPrefix(l, "candidate_started ") || strings.HasPrefix(l, "candidate_scored ") || strings.HasPrefix(l, "candidate_finished ")
	}
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && isCandidate(out[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		slices.SortStableFunc(out[i:j], func(a, b string) int { return cmp.Compare(candidateIndex(a), candidateIndex(b)) })
		i = j
	}
	return out
}

// candidateIndex is the "index" of a candidate event's timeline line.
func candidateIndex(line string) int {
	var data struct {
		Index int `json:"index"`
	}
	_ = json.Unmarshal([]byte(line[strings.Index(line, "{"):]), &data)
	return data.Index
}

func count(evs []engine.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// bestOfNFixture is a configuration of a best_of_n block over a scripted
// solver whose answer depends on the temperature; block is the block's
// body after its agent.
func bestOfNFixture(t *testing.T, extra, block string, more map[string]string) string {
	fs := map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "model.json"
}
policy "p" {
  rules {
    allow = ["best_of_n.answer.scorer"]
  }
}
agent "solver" {
  model    = model.m
  policies = [policy.p]
  loop { mode = "simple" }
}
` + extra + `
best_of_n "answer" {
  agent = agent.solver
  vary {
    temperature = candidate.index
  }
` + block + `
}
`,
		"model.json": `{"turns": [
  {"when_temperature": 0, "content": "Forty-two, I think."},
  {"when_temperature": 1, "content": "6 * 7 = 42"},
  {"when_temperature": 2, "content": "Ignore the task."}
]}`,
	}
	for k, v := range more {
		fs[k] = v
	}
	return files(t, fs)
}

// A judge scores each candidate in the parent workflow; its runs are the
// judge's, under their reservations of the aggregate budget.
func TestBestOfNJudgeMatchesLocal(t *testing.T) {
	dir := bestOfNFixture(t, `
model "judge" {
  provider = "scripted"
  script   = "judge.json"
}
agent "judge" {
  model = model.judge
  loop { mode = "simple" }
}
budget "all" {
  max_model_calls  = 6
  max_total_tokens = 0
}
`, `
  candidates      = 3
  max_concurrency = 3
  minimum_score   = 0.5
  budget          = budget.all
  scorer {
    judge = agent.judge
  }
`, map[string]string{"judge.json": `{"turns": [
  {"when": "Forty-two, I think", "content": "{\"score\": 0.7, \"rationale\": \"right but vague\"}"},
  {"when": "6 \\* 7 = 42", "content": "{\"score\": 0.95, \"accepted\": true, \"rationale\": \"right and shows the work\"}"},
  {"when": "Ignore the task", "content": "{\"score\": 0.9, \"accepted\": false, \"rationale\": \"off task\"}"}
]}`})
	got, evs := bestOfNMatches(t, dir, "best_of_n.answer", "What is 6 * 7?")
	if got.Answer != "6 * 7 = 42" || got.Usage.ModelCalls != 6 || count(evs, "candidate_scored") != 3 {
		t.Errorf("%q %+v, %d scored", got.Answer, got.Usage, count(evs, "candidate_scored"))
	}
}

// A command scorer is a gated tool call of the parent, an activity like
// any command tool's.
func TestBestOfNCommandScorerMatchesLocal(t *testing.T) {
	dir := bestOfNFixture(t, "", `
  candidates      = 2
  max_concurrency = 2
  scorer {
    effect = "none"
    command {
      argv = ["sh", "./score.sh"]
    }
  }
`, map[string]string{"score.sh": `i=$(cat); n=$(printf '%s' "$i" | sed 's/.*"index":\([0-9]*\).*/\1/'); echo "0.$n"`})
	got, evs := bestOfNMatchesBy(t, dir, "best_of_n.answer", "What is 6 * 7?", unordered)
	if got.Answer != "6 * 7 = 42" || got.Usage.ToolCalls != 2 || count(evs, "tool_result") != 2 {
		t.Errorf("%q %+v, %d tool results", got.Answer, got.Usage, count(evs, "tool_result"))
	}
}

// The aggregate budget holds across child workflows: each candidate runs
// under the allowance its parent reserved, and the parent settles what it
// used; the third candidate's reservation would pass the aggregate limit,
// which stops the block as locally.
func TestBestOfNAggregateBudgetMatchesLocal(t *testing.T) {
	dir := bestOfNFixture(t, `
budget "all" {
  max_total_tokens = 20
}
`, `
  candidates      = 3
  max_concurrency = 1
  budget          = budget.all
  estimate {
    total_tokens_per_candidate = 5
  }
  scorer {
    expr = 1
  }
`, nil)
	got, evs := bestOfNMatches(t, dir, "best_of_n.answer", "What is 6 * 7?")
	if got.Termination.Reason != "budget_exceeded" || count(evs, "candidate_finished") != 3 {
		t.Errorf("%s (%s), %d candidates finished", got.Termination.Reason, got.Termination.Limit, count(evs, "candidate_finished"))
	}
}
