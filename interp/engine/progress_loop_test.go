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
