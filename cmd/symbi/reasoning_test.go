package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/engine"
)

// TestReasoningIsShownDimmedApartFromTheAnswer: on a terminal, a model's
// reasoning goes to stderr between SGR 2 and SGR 0, on lines of its own,
// before the answer, which alone goes to stdout. The model's control
// characters never reach the terminal, and a delegated agent's reasoning
// is not shown.
func TestReasoningIsShownDimmedApartFromTheAnswer(t *testing.T) {
	var stdout, term bytes.Buffer
	p := newRunPrinter(&stdout, &term, false)
	p.dim = true
	p.event(engine.Event{Type: engine.ReasoningDelta, Delta: "6 times 7"})
	p.event(engine.Event{Type: engine.ReasoningDelta, Delta: " is 42\x1b[2J\a"})
	p.event(engine.Event{Type: engine.ReasoningDelta, Depth: 1, Delta: "a delegate's"})
	p.event(engine.Event{Type: engine.ContentDelta, Delta: "42"})
	p.summary(&engine.Result{RunID: "r1", Termination: engine.Termination{Reason: engine.Completed}, Iterations: 1})
	if got := stdout.String(); got != "42\n" {
		t.Errorf("stdout %q: want the answer alone", got)
	}
	got := term.String()
	if want := "\x1b[2m6 times 7 is 42[2J\x1b[0m\n"; !strings.HasPrefix(got, want) {
		t.Errorf("stderr %q\nwant it to start %q", got, want)
	}
	if strings.Contains(got, "delegate") || strings.Count(got, "\x1b") != 2 {
		t.Errorf("stderr %q", got)
	}

	// Without a terminal (or with NO_COLOR) the reasoning is plain text,
	// and a tool call's line does not join it.
	term.Reset()
	stdout.Reset()
	p = newRunPrinter(&stdout, &term, false)
	p.event(engine.Event{Type: engine.ReasoningDelta, Delta: "look it up"})
	calls, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"name": "search", "arguments": `{"q":"x"}`}}})
	p.event(engine.Event{Type: "reasoning_complete", Data: calls})
	if got := term.String(); !strings.HasPrefix(got, "look it up\n→ search") || strings.Contains(got, "\x1b") {
		t.Errorf("stderr %q", got)
	}

	// --json has every delta as a line of its own.
	stdout.Reset()
	p = newRunPrinter(&stdout, &term, true)
	p.event(engine.Event{Type: engine.ReasoningDelta, Delta: "think"})
	if got := stdout.String(); !strings.Contains(got, `"event":"reasoning_delta"`) || !strings.Contains(got, `"delta":"think"`) {
		t.Errorf("--json %q", got)
	}
}
