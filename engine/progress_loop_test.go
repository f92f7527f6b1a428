package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestProgressLoopVerdicts(t *testing.T) {
	p, dir := fixture{
		"main.hcl": `
model "m" {
  provider = "scripted"
  script   = "s.json"
}
agent "a" {
  model = model.m
}
`,
		"s.json": `{"turns": [{"content": "x"}]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	r, err := e.newRun(context.Background(), "a", "task", RunOptions{NoJournal: true})
	if err != nil {
		t.Fatal(err)
	}
	fail := func(msg string) []observation {
		return []observation{{callID: "c", tool: "search", content: "[tool failed: timeout] " + msg, kind: obsError}}
	}

	skip := NewProgressTracker(plan.Progress{MaxReattemptsPerStep: 1, SimilarityThreshold: 0.8, OnLimit: "skip"})
	for i, msg := range []string{"after 10ms", "after 12ms"} {
		if err := r.trackProgress(context.Background(), skip, fail(msg)); err != nil {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	obs := fail("after 13ms")
	if err := r.trackProgress(context.Background(), skip, obs); err != nil || !strings.Contains(obs[0].content, "has been skipped") {
		t.Fatalf("skip: %v %q", err, obs[0].content)
	}

	abort := NewProgressTracker(plan.Progress{MaxReattemptsPerStep: 1, SimilarityThreshold: 0.8, OnLimit: "abort"})
	_ = r.trackProgress(context.Background(), abort, fail("1"))
	// A success in between forgets the failures.
	_ = r.trackProgress(context.Background(), abort, []observation{{tool: "search", content: "ok", kind: obsResult}})
	_ = r.trackProgress(context.Background(), abort, fail("2"))
	if err := r.trackProgress(context.Background(), abort, fail("3")); err != nil {
		t.Fatalf("second similar failure after a success: %v", err)
	}
	var st *StuckError
	if err := r.trackProgress(context.Background(), abort, fail("4")); !errors.As(err, &st) || st.Step != "search" {
		t.Fatalf("abort: %v", err)
	}

	// Escalation with no one to ask ends the run like abort.
	esc := NewProgressTracker(plan.Progress{MaxReattemptsPerStep: 1, SimilarityThreshold: 0.8, OnLimit: "escalate"})
	_ = r.trackProgress(context.Background(), esc, fail("1"))
	_ = r.trackProgress(context.Background(), esc, fail("2"))
	if err := r.trackProgress(context.Background(), esc, fail("3")); !errors.As(err, &st) {
		t.Fatalf("escalate without an approver: %v", err)
	}

	// Denials are not failures to make progress.
	deny := NewProgressTracker(plan.Progress{MaxReattemptsPerStep: 1, SimilarityThreshold: 0.8, OnLimit: "abort"})
	for range 5 {
		if err := r.trackProgress(context.Background(), deny, []observation{{tool: "search", content: "[policy denied] no", kind: obsDenied}}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReactStopsAToolThatKeepsFailing runs the progress block inside the
// react loop: a command tool that fails the same way every time ends the
// run after max_reattempts_per_step further attempts, instead of using up
// the iteration budget. Two similar failures are allowed after the first
// (docs/reasoning.md); the one after them ends the run.
func TestReactStopsAToolThatKeepsFailing(t *testing.T) {
	p, dir := fixture{
		"main.hcl": `
model "m" {
  provider = "scripted"
  script   = "scripts/model.json"
}

tool "broken" {
  description = "Always fails the same way"
  command {
    argv = ["sh", "-c", "echo 'disk quota exceeded' >&2; exit 1"]
  }
}

policy "rules" {
  rules {
    allow = ["broken"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.broken]
  policies = [policy.rules]
  progress {
    max_reattempts_per_step = 2
    on_limit                = "abort"
  }
}
`,
		"scripts/model.json": `{"turns": [{"tool_calls": [{"id": "c1", "name": "broken", "arguments": {}}]}], "on_exhausted": "repeat_last"}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res, err := e.Run(context.Background(), "a", "go", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st *StuckError
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &st) || st.Step != "broken" {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
	if res.Iterations != 4 {
		t.Errorf("iterations = %d, want 4 (a first failure, two allowed similar ones, and the one over the limit)", res.Iterations)
	}
}
