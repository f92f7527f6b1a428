package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestEndlessStreamStopsAtTheBudget runs a model that streams without end
// (content, or one tool call's arguments) under each limit that caps a
// call's output. The run must stop on that limit by name while the call is
// in flight — the server sees one request — and count what streamed.
func TestEndlessStreamStopsAtTheBudget(t *testing.T) {
	cases := []struct {
		name        string
		loop, limit string // the loop's and the budget block's settings
		want        string
		arguments   bool
		most        int64 // completion tokens the run may count, at most
	}{
		{"the call's max_output_tokens", "max_output_tokens = 200", "", budget.MaxOutputTokens, false, 200 + 100 + 64 + 64},
		{"max_total_tokens", "max_output_tokens = 100000", "max_total_tokens = 3000", budget.MaxTotalTokens, false, 3000 + 1500 + 64 + 64},
		{"max_completion_tokens", "max_output_tokens = 100000", "max_completion_tokens = 500", budget.MaxCompletionTokens, false, 500 + 250 + 64 + 64},
		{"arguments under max_output_tokens", "max_output_tokens = 200", "", budget.MaxOutputTokens, true, 200 + 100 + 64 + 64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Reply{
				Flood:     &fakeserver.Flood{Arguments: tc.arguments, Chunk: 256},
				ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator"}},
			}))
			hcl := fmt.Sprintf(`
model "m" {
  provider = "openai"
  name     = "fake-model"
  base_url = %q
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
  timeout = "60s"
  %s
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.b
  loop {
    mode = "react"
    %s
  }
}
`, srv.URL(), tc.limit, tc.loop)
			p, dir := fixture{"main.hcl": hcl}.compile(t)
			e, _ := newEngine(t, p, dir, nil)
			res := mustRun(t, e, "a", "go on", RunOptions{})
			var ex *budget.Exceeded
			if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != tc.want || !errors.As(res.Termination.Err, &ex) {
				t.Fatalf("want budget_exceeded (%s), got %s: %v", tc.want, res.Termination, res.Termination.Err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want the one stopped in flight", n)
			}
			u := res.Usage
			if u.ModelCalls != 1 || u.CompletionTokens == 0 || u.CompletionTokens > tc.most {
				t.Errorf("usage %+v: want one call counting what streamed, at most %d completion tokens", u, tc.most)
			}
		})
	}
}
