package repl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRun(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	// Without input, var.input is the input.
	want := "6 × 7 is 42.\n-- run 20261202T120000Z-01020304 completed: 2 iterations, 2 model calls, 1 tool call, 61 tokens, $0.0000, <dur>\n"
	if got := normalize(handle(t, s, ":run assistant")); got != want {
		t.Errorf(":run assistant:\n%s", cmp.Diff(want, got))
	}
	// A quoted input is an HCL string: it may interpolate.
	if got := handle(t, s, `:run agent.assistant "What is ${3 * 2} * 7?"`); !strings.HasPrefix(got, "6 × 7 is 42.\n-- run ") {
		t.Errorf("quoted input: %q", got)
	}
	// The policy denies the division; the model sees the denial and adapts.
	if got := handle(t, s, ":run agent.assistant please divide by zero"); !strings.HasPrefix(got, "I may not divide by zero.\n") {
		t.Errorf("denied call: %q", got)
	}
	journal := handle(t, s, ":journal")
	if !strings.Contains(journal, `calculator: deny by policy.rules (rules): tool_call "calculator" matches deny rule "calculator:expression=*/ 0*"`) {
		t.Errorf(":journal of the denied run:\n%s", journal)
	}
}

func TestRunErrors(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	for _, tc := range []struct{ in, summary, subject string }{
		{":run", "Missing agent", ":run"},
		{":run agent.ghost hello", "No such agent", "agent.ghost"},
		{":run best_of_n.ghost hello", "No such best_of_n", "best_of_n.ghost"},
		{":step best_of_n.x hello", "Cannot step best-of-N", "best_of_n.x"},
		{`:run assistant "${nope}"`, "Unknown variable", "nope"},
		{`:run assistant "a" + 1`, "Invalid operand", `"a"`},
	} {
		_, _, diags := s.Handle(context.Background(), tc.in)
		if !diags.HasErrors() || diags[0].Summary != tc.summary || subjectText(tc.in, diags[0]) != tc.subject {
			t.Errorf("%s:\n%s", tc.in, diagText(s, diags))
		}
	}
}

func TestJournal(t *testing.T) {
	s, dir := newTestSession(t, Options{})
	if got := handle(t, s, ":journal"); got != "No runs in "+filepath.Join(dir, ".symbi")+" yet; :run or :step an agent first.\n" {
		t.Errorf("no runs: %q", got)
	}
	handle(t, s, ":run assistant")
	handle(t, s, ":run assistant please divide")
	want := `run 20261202T120000Z-01020304  agent.assistant  completed, 2 iterations, 2 model calls, 1 tool call, 61 tokens, $0.0000
  +<dur>  #1  iter 0  started                 agent.assistant, mode react, input "What is 6 * 7?"
  +<dur>  #2  iter 1  model_call_started      model.offline, estimated 115 + 512 tokens
  +<dur>  #3  iter 1  reasoning_complete      model.offline proposes tool_call calculator {"expression":"6*7"}
  +<dur>  #4  iter 1  policy_evaluated        calculator: allow by policy.rules (rules): tool_call "calculator" matches allow rule "calculator"
  +<dur>  #5  iter 1  tools_dispatched        calculator {"expression":"6*7"}
  +<dur>  #6  iter 1  tool_result             calculator returned "42"
  +<dur>  #7  iter 1  observations_collected  1 observation (0 denied, 0 errors)
  +<dur>  #8  iter 2  model_call_started      model.offline, estimated 139 + 512 tokens
  +<dur>  #9  iter 2  reasoning_complete      model.offline proposes respond "6 × 7 is 42."
  +<dur>  #10  iter 2  policy_evaluated        respond: allow by chain: no policy addresses respond; respond is allowed unless a policy denies it
  +<dur>  #11  iter 2  terminated              completed, answer "6 × 7 is 42."
`
	// The durations differ in width, so the columns do too: compare the
	// cells, not the padding.
	cells := func(s string) string { return strings.Join(strings.Fields(normalize(s)), " ") }
	if got := handle(t, s, ":journal 20261202T120000Z-01020304"); cells(got) != cells(want) {
		t.Errorf(":journal ID:\n%s", cmp.Diff(want, normalize(got)))
	}
	if got := handle(t, s, ":journal 20261202T120000Z-0102"); cells(got) != cells(want) {
		t.Errorf(":journal PREFIX:\n%s", cmp.Diff(want, normalize(got)))
	}
	latest := handle(t, s, ":journal")
	if !strings.HasPrefix(latest, "run 20261202T120000Z-05060708  agent.assistant  completed") {
		t.Errorf(":journal shows the latest run first:\n%s", latest)
	}
	for _, tc := range []struct{ in, summary string }{
		{":journal nope", "No such run"},
		{":journal 20261202T", "Ambiguous run id"},
	} {
		_, _, diags := s.Handle(context.Background(), tc.in)
		if !diags.HasErrors() || diags[0].Summary != tc.summary {
			t.Errorf("%s: %v", tc.in, diags)
		}
	}
	if _, got := s.CompleteAt(":journal 2026"); len(got) != 2 {
		t.Errorf("run ids complete: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".symbi", "runs", "20261202T120000Z-01020304", "journal.jsonl")); err != nil {
		t.Errorf("the run is journalled in the configuration's state_dir: %v", err)
	}
}

func TestStepShowsOnePhasePerEnter(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	steps := []struct{ in, want string }{
		{":step assistant", `run 20261202T120000Z-01020304 started: agent.assistant, mode react, input "What is 6 * 7?"
Enter runs the next phase; :continue runs to the end; :abort cancels.
`},
		{"", `reason   model.offline proposes tool_call calculator {"expression":"6*7"}
`},
		{"var.topic", "\"tides\"\n"}, // expressions work between phases
		{"", `gate     calculator: allow by policy.rules (rules): tool_call "calculator" matches allow rule "calculator"
`},
		{"", `act      calculator {"expression":"6*7"}
act      calculator returned "42"
observe  1 observation (0 denied, 0 errors)
`},
		{"", `reason   model.offline proposes respond "6 × 7 is 42."
`},
		{"", `gate     respond: allow by chain: no policy addresses respond; respond is allowed unless a policy denies it
`},
		{"", `end      completed, answer "6 × 7 is 42."
6 × 7 is 42.
-- run 20261202T120000Z-01020304 completed: 2 iterations, 2 model calls, 1 tool call, 61 tokens, $0.0000, <dur>
`},
		{"", ""}, // the run is over: Enter does nothing
	}
	for i, st := range steps {
		if i > 0 && i < len(steps)-1 && s.Prompt() != "step> " {
			t.Errorf("step %d: prompt %q while stepping", i, s.Prompt())
		}
		if got := normalize(handle(t, s, st.in)); got != st.want {
			t.Fatalf("step %d (%q):\n%s", i, st.in, cmp.Diff(st.want, got))
		}
	}
	if s.Prompt() != "> " {
		t.Errorf("prompt %q after the run", s.Prompt())
	}
}

func TestStepShowsDenials(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	handle(t, s, ":step assistant please divide by zero")
	handle(t, s, "")
	if got := handle(t, s, ""); !strings.HasPrefix(got, `gate     calculator: deny by policy.rules (rules)`) {
		t.Errorf("gate phase: %q", got)
	}
	if got := handle(t, s, ""); !strings.Contains(got, "observe  1 observation (1 denied, 0 errors)") {
		t.Errorf("observe phase: %q", got)
	}
	if got := handle(t, s, ":continue"); !strings.Contains(got, "I may not divide by zero.\n-- run ") {
		t.Errorf(":continue: %q", got)
	}
}

func TestStepContinueAbortAndClose(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	handle(t, s, ":step assistant")
	for _, tc := range []struct{ in, summary string }{
		{":step assistant", "A run is being stepped"},
		{":run assistant", "A run is being stepped"},
	} {
		if _, _, diags := s.Handle(context.Background(), tc.in); !diags.HasErrors() || diags[0].Summary != tc.summary {
			t.Errorf("%s while stepping: %v", tc.in, diags)
		}
	}
	out := normalize(handle(t, s, ":continue"))
	if !strings.HasPrefix(out, "reason   model.offline proposes tool_call") || !strings.HasSuffix(out, "6 × 7 is 42.\n-- run 20261202T120000Z-01020304 completed: 2 iterations, 2 model calls, 1 tool call, 61 tokens, $0.0000, <dur>\n") {
		t.Errorf(":continue:\n%s", out)
	}

	handle(t, s, ":step assistant")
	handle(t, s, "")
	// Whether the cancelled run had reserved its tool call depends on where
	// the cancellation found it, so the summary is checked up to there.
	if got := normalize(handle(t, s, ":abort")); !strings.HasPrefix(got, "-- run 20261202T120000Z-05060708 cancelled: 1 iteration, 1 model call, ") {
		t.Errorf(":abort: %q", got)
	}
	if s.Prompt() != "> " {
		t.Errorf("prompt after :abort: %q", s.Prompt())
	}

	// Close (and :quit, and a reload) end a paused run.
	handle(t, s, ":step assistant")
	if err := s.Close(); err != nil || s.step != nil {
		t.Errorf("Close: %v, still stepping: %v", err, s.step != nil)
	}
	handle(t, s, ":step assistant")
	if _, exit, _ := s.Handle(context.Background(), ":quit"); !exit || s.step != nil {
		t.Errorf(":quit while stepping: exit %v, still stepping %v", exit, s.step != nil)
	}
	handle(t, s, ":step assistant")
	handle(t, s, ":reload")
	if s.step != nil {
		t.Errorf("still stepping after :reload")
	}
}

func TestStepCancelledContext(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	handle(t, s, ":step assistant")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, _, diags := s.Handle(ctx, ""); out != "" || len(diags) > 0 || s.step == nil {
		t.Errorf("a cancelled Enter should leave the run paused: %q %v", out, diags)
	}
	if got := handle(t, s, ""); !strings.HasPrefix(got, "reason ") {
		t.Errorf("the next Enter runs the next phase: %q", got)
	}
}

func TestRunBestOfN(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"best_of_n.hcl", "scripts/bon_vote.json"} {
		b, err := os.ReadFile(filepath.Join("../examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{})
	defer s.Close()
	if diags := s.Load(dir); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if _, got := s.CompleteAt(":run b"); !cmp.Equal(got, []string{"best_of_n.answer"}) {
		t.Errorf(":run completes best_of_n: %q", got)
	}
	out := handle(t, s, ":run best_of_n.answer")
	if !strings.HasPrefix(out, "42\n-- run ") || !strings.Contains(out, " completed: ") {
		t.Errorf(":run best_of_n.answer:\n%s", out)
	}
}
