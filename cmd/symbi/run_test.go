package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/engine"
)

// TestStreamedAnswerEndsItsLine writes stdout and stderr to one buffer, as
// a terminal shows them: an answer without a final newline gets one before
// the summary, and before whatever follows the run.
func TestStreamedAnswerEndsItsLine(t *testing.T) {
	var term bytes.Buffer
	p := newRunPrinter(&term, &term, false)
	p.event(engine.Event{Type: engine.ContentDelta, Delta: "6 × 7 "})
	p.event(engine.Event{Type: engine.ContentDelta, Delta: "is 42."})
	p.summary(&engine.Result{RunID: "r1", Termination: engine.Termination{Reason: engine.Completed}, Iterations: 1})
	p.close()
	out := term.String()
	if !strings.HasPrefix(out, "6 × 7 is 42.\n\ncompleted · 1 iteration") {
		t.Errorf("the answer and the summary share a line:\n%q", out)
	}
	if !strings.HasSuffix(out, "\n") || strings.Contains(out, "\n\n\n") {
		t.Errorf("output %q", out)
	}

	// An answer that ends with a newline gets no second one.
	term.Reset()
	p = newRunPrinter(&term, &term, false)
	p.event(engine.Event{Type: engine.ContentDelta, Delta: "done\n"})
	p.summary(&engine.Result{RunID: "r2", Termination: engine.Termination{Reason: engine.Completed}, Iterations: 1})
	if out := term.String(); !strings.HasPrefix(out, "done\n\ncompleted") {
		t.Errorf("output %q", out)
	}

	// A run that ends without a summary (an error after the answer
	// started) still ends the line.
	term.Reset()
	p = newRunPrinter(&term, &term, false)
	p.event(engine.Event{Type: engine.ContentDelta, Delta: "partial"})
	p.close()
	if term.String() != "partial\n" {
		t.Errorf("output %q", term.String())
	}
}

// On a terminal, the tool call the model is writing shows as one line
// redrawn in place (tool and arguments so far), taken off the screen for
// the call's "→" line; model_first_event shows nothing. Off a terminal
// neither shows.
func TestToolCallProgressLine(t *testing.T) {
	var term bytes.Buffer
	p := newRunPrinter(&term, &term, false)
	p.live = true
	p.event(engine.Event{Type: engine.ModelFirstEvent, Data: []byte(`{"model":"model.m","after_ms":12}`)})
	p.event(engine.Event{Type: engine.ToolCallDelta, Data: []byte(`{"index":0,"id":"c1","name":"search"}`), Delta: `{"query":`})
	p.event(engine.Event{Type: engine.ToolCallDelta, Data: []byte(`{"index":0}`), Delta: `"otters"}`})
	p.event(engine.Event{Type: "reasoning_complete", Data: []byte(`{"model":"model.m","tool_calls":[{"id":"c1","name":"search","arguments":"{\"query\":\"otters\"}"}]}`)})
	p.close()
	want := "\r\x1b[K✎ search {\"query\":" + "\r\x1b[K✎ search {\"query\":\"otters\"}" + "\r\x1b[K" + "→ search {\"query\":\"otters\"}\n"
	if got := term.String(); got != want {
		t.Errorf("terminal:\n got %q\nwant %q", got, want)
	}

	term.Reset()
	p = newRunPrinter(&term, &term, false)
	p.event(engine.Event{Type: engine.ModelFirstEvent, Data: []byte(`{"model":"model.m","after_ms":12}`)})
	p.event(engine.Event{Type: engine.ToolCallDelta, Data: []byte(`{"index":0,"name":"search"}`), Delta: `{}`})
	p.close()
	if term.Len() != 0 {
		t.Errorf("off a terminal: %q", term.String())
	}
}
