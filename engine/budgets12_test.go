package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
)

// turnsModel answers each request with the next response, as a provider
// would: its content streamed, its usage as given (UsageKnown false for a
// provider that reports none).
type turnsModel struct {
	mu    sync.Mutex
	turns []provider.Response
}

func (m *turnsModel) Stream(ctx context.Context, req provider.Request, on func(provider.Event)) (provider.Response, error) {
	m.mu.Lock()
	if len(m.turns) == 0 {
		m.mu.Unlock()
		return provider.Response{}, &provider.Error{Kind: provider.EmptyResponse, Detail: "no more turns"}
	}
	resp := m.turns[0]
	m.turns = m.turns[1:]
	m.mu.Unlock()
	on(provider.Event{ContentDelta: resp.Content})
	return resp, nil
}

// The router prices a call's output by the estimate the reservation holds
// (estimated_output_tokens_per_call), not by the max_output_tokens cap: a
// priced model whose cap would cost more than the budget has left, but whose
// estimate fits, is chosen. Before, it was rejected ("estimated cost $4.1…
// over the remaining budget") whatever the estimate said.
func TestRouterPricesTheOutputEstimateNotTheCap(t *testing.T) {
	hcl := `
model "priced" {
  provider = "scripted"
  script   = "script.json"
  pricing {
    input_usd_per_mtok  = 1
    output_usd_per_mtok = 1000
  }
}
router "r" {
  models = [model.priced]
}
budget "b" {
  max_cost_usd                     = 1
  estimated_output_tokens_per_call = 200
}
agent "a" {
  model  = router.r
  budget = budget.b
}
`
	// 4096 output tokens at $1000/Mtok are $4.096, over the $1; the 200
	// estimated are $0.20.
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[{"content":"fine","usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}]}`}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "fine" {
		t.Fatalf("got %s, answer %q", res.Termination, res.Answer)
	}
	routed := eventsOf(t, journalOf(t, e, res.RunID), journal.ModelRouted)
	if len(routed) != 1 {
		t.Fatalf("%d model_routed events", len(routed))
	}
	var d journal.ModelRoutedData
	if err := routed[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Model != "model.priced" || len(d.Rejected) != 0 {
		t.Errorf("model_routed %s", routed[0].Data)
	}

	// The estimate still counts: one that does not fit is rejected, with
	// the estimate's cost in the reason.
	p, dir = fixture{"main.hcl": strings.Replace(hcl, "= 200", "= 2000", 1), "script.json": `{"turns":[{"content":"fine"}]}`}.compile(t)
	e, _ = newEngine(t, p, dir, nil)
	res = mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Failed || !strings.Contains(res.Termination.Detail, "estimated cost $2.0") {
		t.Errorf("an estimate over the budget: %s", res.Termination)
	}
}

// reasoning_complete's usage and cost are what the budget counted for the
// call: a total below prompt + completion raised to the sum, a negative
// figure replaced by its estimate, cache counts held within the prompt, and
// an unreported usage estimated (usage_known false). The journal's figures
// then add up to the run's, as docs/journal.md says. Before, the journal
// kept the provider's raw figures (a total of 10, a completion of -5, zeros
// for an unreported usage) while the accountant counted the reconciled ones.
func TestReasoningCompleteUsageIsWhatTheBudgetCounted(t *testing.T) {
	hcl := `
model "m" {
  provider = "scripted"
  script   = "script.json"
  pricing {
    input_usd_per_mtok       = 1
    output_usd_per_mtok      = 2
    cache_read_usd_per_mtok  = 0.5
  }
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
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	calc := func(id string) []provider.ToolCall {
		return []provider.ToolCall{{ID: id, Name: "calculator", Arguments: `{"expression":"1+1"}`}}
	}
	m := &turnsModel{turns: []provider.Response{
		{ToolCalls: calc("c1"), UsageKnown: true, Usage: provider.Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 10, CacheReadTokens: 500}},
		{ToolCalls: calc("c2"), UsageKnown: true, Usage: provider.Usage{PromptTokens: 120, CompletionTokens: -5, TotalTokens: 0}},
		{Content: "two", UsageKnown: false},
	}}
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	var sum journal.ReasoningCompleteData
	var turns []journal.ReasoningCompleteData
	for _, ev := range eventsOf(t, journalOf(t, e, res.RunID), journal.ReasoningComplete) {
		var d journal.ReasoningCompleteData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		turns = append(turns, d)
		sum.Usage.PromptTokens += d.Usage.PromptTokens
		sum.Usage.CompletionTokens += d.Usage.CompletionTokens
		sum.Usage.TotalTokens += d.Usage.TotalTokens
		sum.CostUSD += d.CostUSD
	}
	if len(turns) != 3 {
		t.Fatalf("%d turns", len(turns))
	}
	if u := turns[0].Usage; u.TotalTokens != 150 || u.CacheReadTokens != 100 {
		t.Errorf("turn 1: total %d (want 150, raised to the sum), cache reads %d (want 100, held to the prompt)", u.TotalTokens, u.CacheReadTokens)
	}
	if u := turns[1].Usage; u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("turn 2: %+v; want the negative completion replaced by its estimate", u)
	}
	if u := turns[2].Usage; turns[2].UsageKnown || u.PromptTokens <= 0 || u.CompletionTokens <= 0 {
		t.Errorf("turn 3 (no usage reported): %+v known=%v; want the estimate the budget counted", u, turns[2].UsageKnown)
	}
	if sum.Usage.PromptTokens != res.Usage.PromptTokens || sum.Usage.CompletionTokens != res.Usage.CompletionTokens ||
		sum.Usage.TotalTokens != res.Usage.TotalTokens || math.Abs(sum.CostUSD-res.Usage.CostUSD) > 1e-12 {
		t.Errorf("the journal's turns add up to %+v $%v; the run counted %+v", sum.Usage, sum.CostUSD, res.Usage)
	}
}

// A final answer whose own usage passes max_total_tokens arrived and was
// paid for: it is gated like any answer and reported with the limit it
// reached (budget_exceeded, the answer in the result and the terminated
// event). Before, it was streamed and then dropped: the result said "".
// A policy that denies it keeps it unreported, and a reflect_and_retry
// draft, never evaluated, is not an answer.
func TestAnswerPastTheTokenLimitIsReportedWithTheLimit(t *testing.T) {
	const over = `{"turns":[{"content":"forty-two","usage":{"prompt_tokens":90,"completion_tokens":30,"total_tokens":120}}]}`
	for _, tc := range []struct {
		name, extra, top string
		answer           string
		streamed         string
	}{
		{name: "streamed", answer: "forty-two", streamed: "forty-two"},
		{name: "held then allowed", extra: "policies = [policy.p]", top: `policy "p" {
  rules {
    allow = ["respond:content=forty*"]
  }
}`, answer: "forty-two", streamed: "forty-two"},
		{name: "held then denied", extra: "policies = [policy.p]", top: `policy "p" {
  rules {
    deny = ["respond:content=forty*"]
  }
}`},
		{name: "a reflect draft", extra: "reflect {\nrubric {\ncriterion \"c\" {\ndescription = \"right\"\n}\n}\n}\nloop {\nmode = \"reflect_and_retry\"\n}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hcl := `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
budget "b" {
  max_total_tokens = 100
}
` + tc.top + `
agent "a" {
  model  = model.m
  budget = budget.b
  ` + tc.extra + `
}
`
			p, dir := fixture{"main.hcl": hcl, "script.json": over}.compile(t)
			e, rec := newEngine(t, p, dir, nil)
			res := mustRun(t, e, "a", "x", RunOptions{})
			if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != "max_total_tokens" {
				t.Fatalf("termination %s; want budget_exceeded (max_total_tokens)", res.Termination)
			}
			if res.Answer != tc.answer || rec.deltas() != tc.streamed {
				t.Errorf("answer %q, streamed %q; want %q, %q", res.Answer, rec.deltas(), tc.answer, tc.streamed)
			}
			evs := journalOf(t, e, res.RunID)
			var d journal.TerminatedData
			if err := evs[len(evs)-1].Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.Reason != "budget_exceeded" || d.Limit != "max_total_tokens" || d.Answer != tc.answer || d.Usage.TotalTokens != 120 {
				t.Errorf("terminated %s", evs[len(evs)-1].Data)
			}
		})
	}
}

// max_plan_steps is a budget limit like any other: a plan longer than the
// steps the budget has left is sent back once, like any plan that cannot
// run, and a second one ends the run budget_exceeded (max_plan_steps)
// before any step starts. Before, it ended as PlanError too_many_steps
// (exit 4), as if the model had broken plan.max_steps.
func TestMaxPlanStepsEndsAsABudgetLimit(t *testing.T) {
	hcl := `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
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
`
	three := `{\"steps\": [{\"id\": \"a\", \"task\": \"A\"}, {\"id\": \"b\", \"task\": \"B\"}, {\"id\": \"c\", \"task\": \"C\"}]}`
	p, dir := fixture{"main.hcl": hcl, "scripts/model.json": `{"turns": [
  {"when": "at most 2 steps", "content": "` + three + `"},
  {"when": "the budget has 2 plan steps left", "content": "` + three + `"}
]}`}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	var pe *PlanError
	if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != "max_plan_steps" || errors.As(res.Termination.Err, &pe) {
		t.Fatalf("termination %s (%v); want budget_exceeded (max_plan_steps)", res.Termination, res.Termination.Err)
	}
	if !strings.Contains(res.Termination.Detail, "max_plan_steps (limit 2, would use 3)") {
		t.Errorf("detail %q", res.Termination.Detail)
	}
	if got := stepEvents(t, journalOf(t, e, res.RunID)); len(got) != 0 {
		t.Errorf("steps %v; a plan the budget cannot finish runs none", got)
	}

	// plan.max_steps is the plan's own shape: breaking it stays a PlanError.
	p, dir = fixture{"main.hcl": strings.Replace(hcl, "max_plan_steps = 2", "max_plan_steps = 5", 1) + `
`, "scripts/model.json": `{"turns": [{"content": "` + three + `"}], "on_exhausted": "repeat_last"}`}.compile(t)
	p.Agents[0].Plan.MaxSteps = 2
	e, _ = newEngine(t, p, dir, nil)
	res = mustRun(t, e, "", "task", RunOptions{})
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &pe) || pe.Kind != PlanErrorTooManySteps {
		t.Errorf("over plan.max_steps: %s (%v)", res.Termination, res.Termination.Err)
	}
}

// bonShared is a best-of-N block over agent.a with two candidates run one
// after the other, every tool call allowed, and the aggregate budget
// budget.agg (which the test declares).
const bonShared = `
model "m" {
  provider = "scripted"
  script   = "script.json"
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
best_of_n "answer" {
  agent           = agent.a
  candidates      = 2
  max_concurrency = 1
  side_effects    = "allow"
  budget          = budget.agg
  estimate {
    total_tokens_per_candidate = 10
  }
  scorer {
    expr = 1
  }
}
`

// The aggregate budget of a best-of-N block shares every limit, not only
// the six the old ledger capped: with max_iterations = 3 and candidates
// that take two iterations each (a tool call, then the answer), the second
// candidate is funded with the one iteration left and stops there; before,
// both ran their two and the aggregate's max_iterations was never looked
// at. Likewise max_plan_steps across plan_execute candidates.
func TestBestOfNAggregateSharesIterationsAndPlanSteps(t *testing.T) {
	t.Run("max_iterations", func(t *testing.T) {
		hcl := bonShared + `
budget "agg" {
  max_iterations = 3
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`
		p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns": [
  {"when": "^task$", "tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}]},
  {"when": "^2$", "content": "two"}
], "on_exhausted": "repeat_last"}`}.compile(t)
		e, _ := newEngine(t, p, dir, nil)
		res, err := e.BestOfN(context.Background(), "answer", "task", RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Termination.Reason != Completed || res.Selected == nil || res.Selected.Index != 0 {
			t.Fatalf("termination %s, selected %v", res.Termination, res.Selected)
		}
		c := res.Candidates
		if c[0].Iterations != 2 || c[1].Iterations != 1 || c[1].Status != StatusBudgetExceeded {
			t.Errorf("candidates: #0 %d iterations %s, #1 %d iterations %s (%v); want 2 and the 1 left, budget_exceeded",
				c[0].Iterations, c[0].Status, c[1].Iterations, c[1].Status, c[1].Error)
		}
		if res.Iterations > 3 {
			t.Errorf("%d iterations under an aggregate max_iterations of 3", res.Iterations)
		}
	})
	t.Run("max_plan_steps", func(t *testing.T) {
		hcl := bonShared + `
budget "agg" {
  max_plan_steps = 3
}
agent "a" {
  model    = model.m
  loop {
    mode = "plan_execute"
  }
}
`
		plan := `{\"steps\": [{\"id\": \"a\", \"task\": \"A\"}, {\"id\": \"b\", \"task\": \"B\"}]}`
		p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns": [
  {"when": "Break the task", "content": "` + plan + `"},
  {"when": "cannot run", "content": "` + plan + `"},
  {"when": "Your step", "content": "done"},
  {"when": "carried out in steps", "content": "final"}
], "on_exhausted": "repeat_last"}`}.compile(t)
		e, rec := newEngine(t, p, dir, nil)
		res, err := e.BestOfN(context.Background(), "answer", "task", RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		for _, typ := range rec.types() {
			if typ == journal.StepStarted {
				steps++
			}
		}
		if steps > 3 {
			t.Errorf("%d plan steps started under an aggregate max_plan_steps of 3", steps)
		}
		c := res.Candidates
		if res.Termination.Reason != Completed || c[0].Status != StatusEligible || c[1].Status != StatusBudgetExceeded {
			t.Errorf("termination %s; candidates %s, %s (%v)", res.Termination, c[0].Status, c[1].Status, c[1].Error)
		}
	})
}

// A judge run reserves the scorer's own cost estimate before it starts: a
// generation that cost more than its estimate leaves too little of
// max_cost_usd for the judge's $0.60, and the run stops before the judge
// is called (budget_exceeded, max_cost_usd) rather than after.
func TestJudgeReservesTheScorerCost(t *testing.T) {
	hcl := `
model "m" {
  provider = "scripted"
  script   = "gen.json"
  pricing {
    input_usd_per_mtok  = 1000
    output_usd_per_mtok = 1000
  }
}
model "j" {
  provider = "scripted"
  script   = "judge.json"
  pricing {
    input_usd_per_mtok  = 1000
    output_usd_per_mtok = 1000
  }
}
agent "a" {
  model = model.m
}
agent "judge" {
  model = model.j
}
budget "agg" {
  max_cost_usd     = 1
  max_total_tokens = 0
}
best_of_n "answer" {
  agent      = agent.a
  candidates = 1
  budget     = budget.agg
  estimate {
    cost_usd_per_candidate        = 0.3
    scorer_cost_usd_per_candidate = 0.6
  }
  scorer {
    judge = agent.judge
  }
}
`
	p, dir := fixture{"main.hcl": hcl,
		"gen.json":   `{"turns": [{"content": "42", "usage": {"prompt_tokens": 400, "completion_tokens": 100, "total_tokens": 500}}]}`,
		"judge.json": `{"turns": [{"content": "{\"score\": 1}"}]}`,
	}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != "max_cost_usd" {
		t.Fatalf("termination %s; want budget_exceeded (max_cost_usd)", res.Termination)
	}
	if !strings.Contains(res.Termination.Detail, "would use $1.1") {
		t.Errorf("detail %q; want the generation's $0.50 and the judge's $0.60", res.Termination.Detail)
	}
	for _, ev := range rec.events {
		if ev.Type == journal.ReasoningComplete && ev.Agent == "agent.judge" {
			t.Errorf("the judge was called: %s", ev.Data)
		}
	}
	if u := res.Usage; math.Abs(u.CostUSD-0.5) > 1e-9 {
		t.Errorf("usage %+v; want the generation's $0.50 only", u)
	}
}

// selectorHCL is a best-of-N block of three candidates whose command
// selector is pick.sh (the test writes it), under policy.p.
func selectorHCL(rules string) string {
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
  agent      = agent.a
  candidates = 3
  scorer {
    expr = 1
  }
  selector {
    kind   = "command"
    effect = "none"
    command {
      argv = ["sh", "./pick.sh"]
    }
  }
}
`
}

// A command selector is a tool call named after its block, gated by the
// agent's policies, counted on the budget and journalled like any; it gets
// the eligible candidates as JSON on stdin and the call's idempotency key
// in its environment, and what it prints is parsed strictly: a denied,
// failed or unreadable selection selects nothing.
func TestCommandSelector(t *testing.T) {
	const script = `{"turns": [{"content": "an answer"}], "on_exhausted": "repeat_last"}`
	run := func(t *testing.T, rules, pick string) (*BestOfNResult, []journal.Event, string) {
		t.Helper()
		p, dir := fixture{"main.hcl": selectorHCL(rules), "script.json": script, "pick.sh": pick}.compile(t)
		e, _ := newEngine(t, p, dir, nil)
		res, err := e.BestOfN(context.Background(), "answer", "task", RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res, journalOf(t, e, res.RunID), dir
	}
	t.Run("allowed", func(t *testing.T) {
		res, evs, dir := run(t, `allow = ["best_of_n.answer"]`,
			`cat > input.json; printf '%s' "$SYMBI_IDEMPOTENCY_KEY" > key.txt; echo '{"index": 2, "reason": "the third reads best"}'`)
		if res.Termination.Reason != Completed || res.Selected == nil || res.Selected.Index != 2 {
			t.Fatalf("termination %s, selected %+v", res.Termination, res.Selected)
		}
		if res.Usage.ToolCalls != 1 || res.Usage.ModelCalls != 3 {
			t.Errorf("usage %+v; want the three candidates' calls and the selector's one tool call", res.Usage)
		}
		in, err := os.ReadFile(filepath.Join(dir, "input.json"))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			BestOfN    string `json:"best_of_n"`
			Task       string `json:"task"`
			Candidates []struct {
				Index   int    `json:"index"`
				Content string `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(in, &got); err != nil || got.BestOfN != "best_of_n.answer" || got.Task != "task" || len(got.Candidates) != 3 || got.Candidates[2].Content != "an answer" {
			t.Errorf("the selector read %s (%v)", in, err)
		}
		if key, _ := os.ReadFile(filepath.Join(dir, "key.txt")); !strings.HasPrefix(string(key), res.RunID) {
			t.Errorf("SYMBI_IDEMPOTENCY_KEY = %q, want the call's key in run %s", key, res.RunID)
		}
		var order []string
		for _, ev := range evs {
			switch ev.Type {
			case journal.PolicyEvaluated, journal.ToolsDispatched, journal.ToolResult, journal.CandidateSelected:
				order = append(order, ev.Type)
			}
		}
		if strings.Join(order, " ") != "policy_evaluated tools_dispatched tool_result candidate_selected" {
			t.Errorf("journal %v", order)
		}
		var gate journal.PolicyEvaluatedData
		var sel journal.CandidateSelectedData
		for _, ev := range evs {
			switch ev.Type {
			case journal.PolicyEvaluated:
				_ = ev.Decode(&gate)
			case journal.CandidateSelected:
				_ = ev.Decode(&sel)
			}
		}
		if d := gate.Decisions; len(d) != 1 || d[0].Action.Tool != "best_of_n.answer" || d[0].Action.Effect != "none" || d[0].Decision.Outcome != "allow" {
			t.Errorf("gate %+v", gate)
		}
		if sel.Index != 2 || sel.Selector != "command" || sel.Reason != "the third reads best" {
			t.Errorf("candidate_selected %+v", sel)
		}
	})
	t.Run("denied", func(t *testing.T) {
		res, _, dir := run(t, `allow = ["calculator"]`, `touch ran; echo 0`)
		var den *DenialError
		if res.Termination.Reason != PolicyDenial || !errors.As(res.Termination.Err, &den) || res.Answer != "" || res.Selected != nil {
			t.Errorf("termination %s (%v), answer %q", res.Termination, res.Termination.Err, res.Answer)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Error("a denied selector ran")
		}
	})
	for name, pick := range map[string]string{
		"not an index": `echo 1.5`,
		"not eligible": `echo 7`,
		"too long":     `yes 0 | head -c 100000`,
		"failed":       `echo broken >&2; exit 3`,
	} {
		t.Run(name, func(t *testing.T) {
			res, evs, _ := run(t, `allow = ["best_of_n.answer"]`, pick)
			if res.Termination.Reason != Failed || res.Answer != "" || res.Selected != nil || !strings.Contains(res.Termination.Detail, "command selector best_of_n.answer") {
				t.Errorf("termination %s: %s", res.Termination, res.Termination.Detail)
			}
			for _, ev := range evs {
				var sel journal.CandidateSelectedData
				if ev.Type == journal.CandidateSelected && (ev.Decode(&sel) != nil || sel.Index != -1 || sel.Reason == "") {
					t.Errorf("candidate_selected %s", ev.Data)
				}
			}
		})
	}
}

// stepModel answers plan_execute's calls; step a's call waits until step
// b's is in flight (reserved), and b's until a's sub-run has ended, so a
// ends while b's call is reserved and not settled.
type stepModel struct {
	bStarted, aEnded chan struct{}
}

func (m *stepModel) Stream(ctx context.Context, req provider.Request, on func(provider.Event)) (provider.Response, error) {
	last := req.Messages[len(req.Messages)-1].Content
	resp := provider.Response{UsageKnown: true, Usage: provider.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}
	switch {
	case strings.Contains(last, "Break the task"):
		resp.Content = `{"steps": [{"id": "a", "task": "A"}, {"id": "b", "task": "B"}]}`
	case strings.Contains(last, "Your step (b)"):
		close(m.bStarted)
		select {
		case <-m.aEnded:
		case <-ctx.Done():
			return provider.Response{}, ctx.Err()
		}
		resp.Content = "done B"
	case strings.Contains(last, "Your step (a)"):
		select {
		case <-m.bStarted:
		case <-ctx.Done():
			return provider.Response{}, ctx.Err()
		}
		resp.Content = "done A"
	default:
		resp.Content = "final"
	}
	return resp, nil
}

// What a run's budget still held when it ended is reported beside its
// usage: a plan step's sub-run that ends while its sibling's model call is
// in flight says so in its terminated event and result (the parent run,
// which waits for every step, holds nothing at its end).
func TestTerminatedReportsTheReservedBesideTheUsage(t *testing.T) {
	hcl := `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
agent "planner" {
  model = model.m
  loop {
    mode = "plan_execute"
  }
  plan {
    max_parallel_steps = 2
  }
}
`
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns": []}`}.compile(t)
	m := &stepModel{bStarted: make(chan struct{}), aEnded: make(chan struct{})}
	var once sync.Once
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.Models = map[string]provider.Model{"model.m": m}
		o.OnEvent = func(ev Event) {
			if ev.Type == journal.Terminated && strings.HasSuffix(ev.RunID, ".a") {
				once.Do(func() { close(m.aEnded) })
			}
		}
	})
	res := mustRun(t, e, "planner", "task", RunOptions{})
	if res.Termination.Reason != Completed || res.Reserved != (budget.Amount{}) {
		t.Fatalf("termination %s, reserved %+v; want completed with nothing held", res.Termination, res.Reserved)
	}
	evs := journalOf(t, e, res.RunID+".a")
	var d journal.TerminatedData
	if err := evs[len(evs)-1].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Reserved == nil || d.Reserved.ModelCalls != 1 || d.Reserved.TotalTokens <= 0 {
		t.Fatalf("step a's terminated %s; want step b's call reserved", evs[len(evs)-1].Data)
	}
	if s := journal.Summarize(evs); s.Reserved != *d.Reserved {
		t.Errorf("summary reserved %+v", s.Reserved)
	}
}

// examples/best_of_n_selector.hcl runs as its comment says: the selector,
// allowed by the agent's rules, picks the shortest of the three answers.
func TestBestOfNSelectorExample(t *testing.T) {
	cfg, diags := interp.Compile("../examples/best_of_n_selector.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e, _ := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res, err := e.BestOfN(context.Background(), "concise", "What is 6 * 7?", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Completed || res.Selected == nil || res.Selected.Index != 1 || res.Answer != "42." {
		t.Fatalf("termination %s, answer %q, selected %+v", res.Termination, res.Answer, res.Selected)
	}
}
