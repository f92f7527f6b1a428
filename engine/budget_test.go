package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/journal"
)

// TestEveryBudgetLimit runs a model that never stops calling the
// calculator (100 prompt and 10 completion tokens a turn) under one limit
// at a time. Each run must stop on that limit, reported by name in the
// result and the journal, having overshot it by at most the one call in
// flight.
func TestEveryBudgetLimit(t *testing.T) {
	const loop = `{"turns":[{"tool_calls":[{"name":"calculator","arguments":{"expression":"1+1"}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}],"on_exhausted":"repeat_last"}`
	const slow = `{"turns":[{"content":"late","latency":"10s"}]}`
	const pairs = `{"turns":[{"tool_calls":[{"name":"calculator","arguments":{"expression":"1+1"}},{"name":"calculator","arguments":{"expression":"2+2"}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}],"on_exhausted":"repeat_last"}`
	cases := []struct {
		limit, setting, script string
		reason                 Reason
		check                  func(t *testing.T, res *Result)
	}{
		{budget.MaxIterations, "max_iterations = 3", loop, MaxIterations, func(t *testing.T, res *Result) {
			if res.Iterations != 3 || res.Usage.ModelCalls != 3 {
				t.Errorf("iterations %d, model calls %d; want 3, 3", res.Iterations, res.Usage.ModelCalls)
			}
		}},
		{budget.MaxModelCalls, "max_model_calls = 2", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.ModelCalls != 2 {
				t.Errorf("model calls %d, want 2", res.Usage.ModelCalls)
			}
		}},
		{budget.MaxToolCalls, "max_tool_calls = 2", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.ToolCalls != 2 {
				t.Errorf("tool calls %d, want 2", res.Usage.ToolCalls)
			}
		}},
		// Calls proposed together fit together or none is counted: the
		// second pair does not fit in 3, runs not at all, and counts nothing.
		{budget.MaxToolCalls, "max_tool_calls = 3", pairs, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.ToolCalls != 2 {
				t.Errorf("tool calls %d, want 2 (the first pair; the second did not run)", res.Usage.ToolCalls)
			}
		}},
		{budget.MaxToolRounds, "max_tool_rounds = 2", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.ToolCalls != 2 {
				t.Errorf("tool calls %d, want 2 (one per round)", res.Usage.ToolCalls)
			}
		}},
		{budget.MaxPromptTokens, "max_prompt_tokens = 250", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.PromptTokens > 250+100 {
				t.Errorf("prompt tokens %d: more than one call past the limit", res.Usage.PromptTokens)
			}
		}},
		{budget.MaxCompletionTokens, "max_completion_tokens = 25", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.CompletionTokens > 25+10 {
				t.Errorf("completion tokens %d: more than one call past the limit", res.Usage.CompletionTokens)
			}
		}},
		{budget.MaxTotalTokens, "max_total_tokens = 250", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.TotalTokens > 250+110 {
				t.Errorf("total tokens %d: more than one call past the limit", res.Usage.TotalTokens)
			}
		}},
		{budget.MaxCostUSD, "max_cost_usd = 0.003", loop, BudgetExceeded, func(t *testing.T, res *Result) {
			if res.Usage.CostUSD > 0.003+0.0011+1e-12 || res.Usage.CostUSD == 0 {
				t.Errorf("cost %v: not counted, or more than one call past the limit", res.Usage.CostUSD)
			}
		}},
		{budget.Timeout, `timeout = "150ms"`, slow, TimedOut, nil},
	}
	for _, tc := range cases {
		t.Run(tc.limit, func(t *testing.T) {
			hcl := fmt.Sprintf(`
model "m" {
  provider = "scripted"
  script   = "script.json"
  pricing {
    input_usd_per_mtok  = 10
    output_usd_per_mtok = 10
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
budget "b" {
  %s
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.b
  loop {
    mode = "react"
  }
}
`, settings(tc.setting))
			p, dir := fixture{"main.hcl": hcl, "script.json": tc.script}.compile(t)
			e, _ := newEngine(t, p, dir, nil)
			res := mustRun(t, e, "a", "loop forever", RunOptions{})
			if res.Termination.Reason != tc.reason || res.Termination.Limit != tc.limit {
				t.Fatalf("termination %s, want %s (%s)", res.Termination, tc.reason, tc.limit)
			}
			if !errors.Is(res.Termination.Err, &budget.Exceeded{Limit: tc.limit}) {
				t.Errorf("error %v is not a budget.Exceeded for %s", res.Termination.Err, tc.limit)
			}
			evs := journalOf(t, e, res.RunID)
			var term journal.TerminatedData
			if last := evs[len(evs)-1]; last.Type != journal.Terminated || last.Decode(&term) != nil || term.Limit != tc.limit || term.Reason != string(tc.reason) {
				t.Errorf("journal ends with %s %s", last.Type, last.Data)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// settings is the budget block's body: the setting under test, and
// generous values for the defaults that would otherwise stop the loop first.
func settings(setting string) string {
	out := setting
	for _, d := range []string{"max_iterations = 100", "max_total_tokens = 0"} {
		if !strings.HasPrefix(setting, strings.SplitN(d, " ", 2)[0]+" ") {
			out += "\n  " + d
		}
	}
	return out
}

// TestTokenPreflightCapsMaxOutput checks that the request's
// max_output_tokens is lowered to what the completion budget still allows.
func TestTokenPreflightCapsMaxOutput(t *testing.T) {
	hcl := agentHCL(allowCalc+`
budget "b" {
  max_completion_tokens = 300
}`, "policies = [policy.rules]\nbudget = budget.b\nloop {\n max_output_tokens = 4096\n}")
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[{"content":"ok","usage":{"prompt_tokens":5,"completion_tokens":2}}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	if got := m.Requests()[0].MaxOutputTokens; got <= 0 || got > 300 {
		t.Errorf("max_output_tokens sent = %d, want 1..300", got)
	}
}
