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
