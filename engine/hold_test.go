package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
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

// TestDispatchIsWrittenAheadOfEffects: a call to a tool that may change
// the world finds its tools_dispatched line on disk when it starts; a
// round that only reads holds the line and writes it with its results,
// or once the round has run for slowReadRound. The tool itself (a real
// process) reads the journal.
func TestDispatchIsWrittenAheadOfEffects(t *testing.T) {
	for _, tc := range []struct {
		name, effect, script string
		onDisk               bool
	}{
		{"write", "write", "cat", true},
		{"destructive", "destructive", "cat", true},
		{"read", "read", "cat", false},
		{"none", "none", "cat", false},
		{"slow_read", "read", "sleep 0.5; cat", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			p, dir := fixture{
				"main.hcl": fmt.Sprintf(`
model "m" {
  provider = "scripted"
  script   = "scripts/model.json"
}
tool "peek" {
  description = "prints the run's journal"
  parameters  = { type = "object" }
  command {
    argv = ["sh", "-c", %q]
  }
  effect = %q
}
policy "rules" {
  rules {
    allow = ["peek"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.peek]
  policies = [policy.rules]
}
`, tc.script+" "+state+"/runs/*/journal.jsonl", tc.effect),
				"scripts/model.json": `{"turns": [{"tool_calls": [{"id": "p1", "name": "peek", "arguments": "{}"}]}, {"content": "done"}]}`,
			}.compile(t)
			e, _ := newEngine(t, p, dir, func(o *Options) {
				o.StateDir = state
				// However long the process takes to start on a loaded
				// machine, only the slow round runs past the threshold.
				o.slowReadRound = time.Minute
				if tc.name == "slow_read" {
					o.slowReadRound = 50 * time.Millisecond
				}
			})
			res := mustRun(t, e, "a", "look", RunOptions{})
			if res.Termination.Reason != Completed {
				t.Fatalf("termination %s", res.Termination)
			}
			var output string
			for _, ev := range journalOf(t, e, res.RunID) {
				if ev.Type == journal.ToolResult {
					var d journal.ToolResultData
					if err := ev.Decode(&d); err != nil {
						t.Fatal(err)
					}
					output = d.Output + d.Error
				}
			}
			if !strings.Contains(output, `"event":"started"`) {
				t.Fatalf("the tool did not read the journal: %q", output)
			}
			if got := strings.Contains(output, `"event":"tools_dispatched"`); got != tc.onDisk {
				t.Errorf("tools_dispatched on disk when the %s tool ran: %v, want %v\n%s", tc.effect, got, tc.onDisk, output)
			}
		})
	}
}
