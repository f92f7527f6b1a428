package engine

import (
	"context"
	"strings"
	"testing"
)

// TestDecidedAnswerIsShownOnlyAfterTheGate: when a policy can decide the
// final answer, nothing of it reaches the terminal before the gate has
// allowed it, and a denied answer never does.
func TestDecidedAnswerIsShownOnlyAfterTheGate(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		denied       bool
	}{
		{"allowed", "The capital of France is Paris.", false},
		{"denied", "The launch code is 0000.", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dir := fixture{
				"main.hcl": `
model "m" {
  provider = "scripted"
  script   = "scripts/model.json"
}

policy "answers" {
  rules {
    deny  = ["respond:content=*launch code*"]
  }
}

agent "a" {
  model    = model.m
  policies = [policy.answers]
}
`,
				"scripts/model.json": `{"turns": [{"content": "` + tc.answer + `", "chunks": ["` + tc.answer[:10] + `", "` + tc.answer[10:] + `"]}]}`,
			}.compile(t)
			e, rec := newEngine(t, p, dir, nil)
			res, err := e.Run(context.Background(), "a", "question", RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			shown := rec.deltas()
			if tc.denied {
				if res.Termination.Reason != PolicyDenial {
					t.Fatalf("termination %s", res.Termination)
				}
				if strings.Contains(shown, "launch") || shown != "" {
					t.Errorf("a denied answer reached the terminal: %q", shown)
				}
				return
			}
			if res.Termination.Reason != Completed || shown != tc.answer {
				t.Errorf("termination %s, shown %q, want the answer once", res.Termination, shown)
			}
		})
	}
}

// TestUndecidedAnswerStreams: without a policy that can decide the answer,
// it streams as the model writes it.
func TestUndecidedAnswerStreams(t *testing.T) {
	p, dir := fixture{
		"main.hcl": `
model "m" {
  provider = "scripted"
  script   = "scripts/model.json"
}

agent "a" {
  model = model.m
}
`,
		"scripts/model.json": `{"turns": [{"content": "Hello there", "chunks": ["Hel", "lo there"]}]}`,
	}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	if _, err := e.Run(context.Background(), "a", "hi", RunOptions{}); err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for _, ev := range rec.events {
		if ev.Type == ContentDelta {
			pieces = append(pieces, ev.Delta)
		}
	}
	if strings.Join(pieces, "") != "Hello there" || len(pieces) < 2 {
		t.Errorf("deltas %q, want the answer in pieces as it streamed", pieces)
	}
}
