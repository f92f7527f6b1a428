package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// What one turn of the endless tool loop reports (testdata/e2e/budgets).
const (
	loopPrompt     = 100
	loopCompletion = 20
)

// endlessToolLoop answers every request with two calculator calls and
// usage of 100 prompt tokens and at most 20 completion tokens, fewer when
// the request caps them, as a real model would.
func endlessToolLoop(t *testing.T) *fakeserver.Server {
	return fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		completion := int64(loopCompletion)
		for _, m := range []int{req.Chat.MaxTokens, req.Chat.MaxCompletionTokens} {
			if m > 0 && int64(m) < completion {
				completion = int64(m)
			}
		}
		return fakeserver.Reply{
			ToolCalls: []fakeserver.ToolCall{
				{ID: fmt.Sprintf("call_%d_a", n), Name: "calculator", Arguments: `{"expression":"1+1"}`},
				{ID: fmt.Sprintf("call_%d_b", n), Name: "calculator", Arguments: `{"expression":"2+2"}`},
			},
			Usage: &provider.Usage{PromptTokens: loopPrompt, CompletionTokens: completion, TotalTokens: loopPrompt + completion},
		}
	}))
}

// spent is what a run used, counted from its journal, and what its last
// model call added.
type spent struct {
	modelCalls, toolCalls, toolRounds, iterations int64
	prompt, completion, total                     int64
	cost                                          float64
	last                                          journal.ReasoningCompleteData
}

func spentIn(t *testing.T, evs []journal.Event) spent {
	var s spent
	for _, rc := range eventsOf[journal.ReasoningCompleteData](t, evs, journal.ReasoningComplete) {
		s.modelCalls++
		s.prompt += rc.Usage.PromptTokens
		s.completion += rc.Usage.CompletionTokens
		s.total += rc.Usage.TotalTokens
		s.cost += rc.CostUSD
		s.last = rc
	}
	s.toolCalls = int64(len(eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)))
	s.toolRounds = int64(len(eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched)))
	s.iterations = int64(terminated(t, evs).Iterations)
	return s
}

// TestBudgetsHoldWithinOneCall runs the endless tool loop under each tight
// limit. The run must stop with exit 3 naming the limit; counted limits must
// hold exactly (calls are reserved before they start), token and cost limits
// within what the last model call added; the journal's usage must match what
// the server saw and what the run reported.
func TestBudgetsHoldWithinOneCall(t *testing.T) {
	t.Parallel()
	const cost1 = (loopPrompt*1000 + loopCompletion*2000) / 1e6 // one full turn, USD
	cases := []struct {
		agent  string
		reason string // terminated reason
		limit  string // terminated limit
		check  func(t *testing.T, s spent)
	}{
		{"model_calls", "budget_exceeded", "max_model_calls", func(t *testing.T, s spent) {
			exactly(t, "model calls", s.modelCalls, 3)
		}},
		{"tool_calls", "budget_exceeded", "max_tool_calls", func(t *testing.T, s spent) {
			// Two calls per turn: the third pair does not fit, and none
			// of it may run.
			exactly(t, "tool calls", s.toolCalls, 4)
		}},
		{"tool_rounds", "budget_exceeded", "max_tool_rounds", func(t *testing.T, s spent) {
			exactly(t, "tool rounds", s.toolRounds, 2)
		}},
		{"iterations", "max_iterations", "max_iterations", func(t *testing.T, s spent) {
			exactly(t, "iterations", s.iterations, 3)
		}},
		{"total_tokens", "budget_exceeded", "max_total_tokens", func(t *testing.T, s spent) {
			atMost(t, "total tokens", s.total, 500, s.last.Usage.TotalTokens)
		}},
		{"prompt_tokens", "budget_exceeded", "max_prompt_tokens", func(t *testing.T, s spent) {
			atMost(t, "prompt tokens", s.prompt, 350, s.last.Usage.PromptTokens)
		}},
		{"completion_tokens", "budget_exceeded", "max_completion_tokens", func(t *testing.T, s spent) {
			atMost(t, "completion tokens", s.completion, 50, s.last.Usage.CompletionTokens)
		}},
		{"total_overshoot", "budget_exceeded", "max_total_tokens", func(t *testing.T, s spent) {
			atMost(t, "total tokens", s.total, 80, s.last.Usage.TotalTokens)
		}},
		{"prompt_overshoot", "budget_exceeded", "max_prompt_tokens", func(t *testing.T, s spent) {
			atMost(t, "prompt tokens", s.prompt, 60, s.last.Usage.PromptTokens)
		}},
		{"cost", "budget_exceeded", "max_cost_usd", func(t *testing.T, s spent) {
			if s.cost > 0.5+s.last.CostUSD+1e-9 {
				t.Errorf("cost $%.4f passes the $0.50 limit by more than the last call's $%.4f", s.cost, s.last.CostUSD)
			}
			if s.last.CostUSD <= 0 || s.last.CostUSD > cost1+1e-9 {
				t.Errorf("the last call cost $%.4f; a full turn costs $%.4f", s.last.CostUSD, cost1)
			}
		}},
	}
	dir := fixture(t, "budgets")
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			srv := endlessToolLoop(t)
			state := filepath.Join(t.TempDir(), "state")
			r := symbi(t, call{dir: dir}, "run", "--agent", tc.agent, "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "loop")
			if r.code != 3 {
				t.Errorf("exit %d, want 3 (stopped by a limit)\n%s", r.code, r)
			}
			if want := tc.reason + " (" + tc.limit + ")"; !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
			}
			evs := readJournal(t, state, onlyRun(t, state))
			assertGated(t, evs)
			end := terminated(t, evs)
			if end.Reason != tc.reason || (tc.reason == "budget_exceeded" && end.Limit != tc.limit) {
				t.Errorf("terminated %q limit %q, want %q limit %q", end.Reason, end.Limit, tc.reason, tc.limit)
			}
			s := spentIn(t, evs)
			if s.modelCalls == 0 {
				t.Fatalf("no model call journalled: %v", eventTypes(evs))
			}
			tc.check(t, s)
			t.Logf("%s: %d model calls, %d tool calls in %d rounds, %d iterations, %d/%d/%d tokens, $%.4f", tc.limit, s.modelCalls, s.toolCalls, s.toolRounds, s.iterations, s.prompt, s.completion, s.total, s.cost)

			// Every call the server answered is in the journal, and the
			// run's own usage agrees with the journal's.
			if n := int64(len(srv.Requests())); n != s.modelCalls {
				t.Errorf("the server answered %d calls; the journal has %d", n, s.modelCalls)
			}
			u := end.Usage
			if u.ModelCalls != s.modelCalls || u.ToolCalls != s.toolCalls || u.TotalTokens != s.total ||
				u.PromptTokens != s.prompt || u.CompletionTokens != s.completion || !near(u.CostUSD, s.cost) {
				t.Errorf("terminated usage %+v disagrees with the journal: %d model calls, %d tool calls, %d/%d/%d tokens, $%.6f",
					u, s.modelCalls, s.toolCalls, s.prompt, s.completion, s.total, s.cost)
			}
		})
	}
}

// atMost checks used ≤ limit + slack, slack being what the call in flight
// may add.
func atMost(t *testing.T, what string, used, limit, slack int64) {
	t.Helper()
	if used > limit+slack {
		t.Errorf("%d %s: the limit %d is passed by more than the last call's %d", used, what, limit, slack)
	}
}

// exactly checks a counted limit: calls are reserved before they start,
// so the run uses all of it that fits and never more.
func exactly(t *testing.T, what string, used, want int64) {
	t.Helper()
	if used != want {
		t.Errorf("%d %s, want %d", used, what, want)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}

// TestBestOfNAggregateBudget runs four best-of-N candidates, two at a
// time, whose calls each use more than the estimate the compile-time
// preflight accepted: the aggregate token limit must stop the set, the
// server must see no more calls than the budget let start, and the tokens
// spent may pass the limit only by the calls that were in flight.
func TestBestOfNAggregateBudget(t *testing.T) {
	t.Parallel()
	const perCall = 300
	srv := fakeserver.New(t, fakeserver.WithLatency(50*time.Millisecond), fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		return fakeserver.Reply{Content: "42", Usage: &provider.Usage{PromptTokens: perCall - 10, CompletionTokens: 10, TotalTokens: perCall}}
	}))
	dir := fixture(t, "bon_budget")
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--best-of", "answer", "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "6*7?")
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (the aggregate budget stopped the set)\n%s", r.code, r)
	}
	evs := readJournal(t, state, onlyRun(t, state))
	end := terminated(t, evs)
	calls := int64(len(srv.Requests()))
	if end.Usage.ModelCalls != calls {
		t.Errorf("the run counts %d model calls; the server answered %d", end.Usage.ModelCalls, calls)
	}
	var spentTokens int64
	for _, c := range eventsOf[journal.CandidateFinishedData](t, evs, journal.CandidateFinished) {
		spentTokens += c.Usage.TotalTokens
	}
	// A call cancelled in flight reports nothing (the provider bills
	// nothing for it), so the journal may show less than calls × perCall.
	if spentTokens > calls*perCall || end.Usage.TotalTokens != spentTokens {
		t.Errorf("candidates report %d tokens, terminated %d; the server took %d calls of %d", spentTokens, end.Usage.TotalTokens, calls, perCall)
	}
	if end.Reason != "budget_exceeded" || end.Limit != "max_total_tokens" {
		t.Errorf("terminated %q limit %q, want budget_exceeded max_total_tokens", end.Reason, end.Limit)
	}
	// The error says which limit and by how much, as docs/budgets.md shows.
	if !strings.Contains(end.Error, "max_total_tokens (limit 480,") {
		t.Errorf("terminated error %q does not give the limit's value", end.Error)
	}
	// Before a call starts its reservation must fit what is left, so at
	// most the two calls in flight together can pass the limit.
	if limit, inFlight := int64(480), int64(2*perCall); end.Usage.TotalTokens > limit+inFlight {
		t.Errorf("%d tokens spent; the limit %d may be passed only by the %d of two calls in flight", end.Usage.TotalTokens, limit, inFlight)
	}
	if calls >= 4 {
		t.Errorf("all %d candidates called the model although the aggregate limit ran out after two", calls)
	}
}
