package repl

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/symbi-dev/symbi/policy"
)

// testConfig copies testdata/repl/config (two agents, a profile, rules that
// deny, ask and allow) into a fresh directory, so that runs journal there.
func testConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../testdata/repl/config")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// testClock advances a millisecond per reading, from a fixed start, so
// run ids differ and nothing depends on the wall clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// counter is a deterministic stand-in for crypto/rand.
type counter struct {
	mu sync.Mutex
	n  byte
}

func (c *counter) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range p {
		c.n++
		p[i] = c.n
	}
	return len(p), nil
}

func newTestSession(t *testing.T, opts Options) (*Session, string) {
	t.Helper()
	dir := testConfig(t)
	clock := &testClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	if opts.Now == nil {
		opts.Now = clock.Now
	}
	if opts.Rand == nil {
		opts.Rand = &counter{}
	}
	s := New(opts)
	t.Cleanup(func() { s.Close() })
	if diags := s.Load(dir); diags.HasErrors() {
		t.Fatalf("load: %s", diags.Error())
	}
	return s, dir
}

// handle runs one line and fails the test on diagnostics.
func handle(t *testing.T, s *Session, line string) string {
	t.Helper()
	out, exit, diags := s.Handle(context.Background(), line)
	if len(diags) > 0 {
		t.Fatalf("%s: unexpected diagnostics:\n%s", line, diagText(s, diags))
	}
	if exit {
		t.Fatalf("%s: unexpected exit", line)
	}
	return out
}

func diagText(s *Session, diags hcl.Diagnostics) string {
	var b strings.Builder
	_ = WriteDiagnostics(&b, s.Files(), diags)
	return b.String()
}

var durations = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s)\b`)

// normalize hides measured durations, which vary from run to run.
func normalize(s string) string { return durations.ReplaceAllString(s, "<dur>") }

func TestEvalPrintsHCL(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	for _, tc := range []struct{ in, want string }{
		{`var.topic`, `"tides"`},
		{`local.greeting`, `"Hello, tides!"`},
		{`local.limits`, `[1, 2, 3]`},
		{`agent.assistant.loop.mode`, `"react"`},
		{`budget.standard.max_iterations`, `6`},
		{`agent.researcher.description`, `"Reads notes about tides"`},
		{`upper("a")`, `"A"`},
		{`length(agent.researcher.effective_tools)`, `2`},
		{`tool.calculator.executor`, "{\n  builtin = \"calculator\"\n  kind    = \"builtin\"\n}"},
		{`{a = 1, b = [true, null]}`, "{\n  a = 1\n  b = [true, null]\n}"},
		{"{\n  a = 1\n  b = \"x\"\n}", "{\n  a = 1\n  b = \"x\"\n}"},
		{`[for n in local.limits : n * 2]`, `[2, 4, 6]`},
	} {
		if got := handle(t, s, tc.in); got != tc.want+"\n" {
			t.Errorf("%s:\n got %q\nwant %q", tc.in, got, tc.want+"\n")
		}
	}
}

// subjectText is the text a diagnostic's caret underlines.
func subjectText(line string, d *hcl.Diagnostic) string {
	if d.Subject == nil {
		return ""
	}
	return line[d.Subject.Start.Byte:d.Subject.End.Byte]
}

func TestErrorsAreDiagnosticsAndTheSessionGoesOn(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	for _, tc := range []struct{ in, summary, subject string }{
		{`nope.x`, "Unknown variable", "nope"},
		{`agent.assistant.lop`, "Unsupported attribute", ".lop"},
		{`1 +`, "Missing expression", ""},
		{`upper(1, 2)`, "Too many function arguments", "2"},
		{`uper("a")`, "Call to unknown function", "uper"},
		{`:frob`, "Unknown command", ":frob"},
		{`:plan agent.x`, "No such block", "agent.x"},
		{`:tools agent.nobody`, "No such agent", "agent.nobody"},
		{`:tools`, "Which agent?", ":tools"},
		{`:gate policy.nope {tool = "x"}`, "No such policy", "policy.nope"},
		{`:gate policy.rules`, "Missing action", "policy.rules"},
		{`:gate policy.rules [1]`, "Not an object", "[1]"},
		{`:gate policy.rules {type = "launch"}`, "Invalid action", `{type = "launch"}`},
		{`:gate policy.rules {tool = "x", agent = "ghost"}`, "No such agent", `{tool = "x", agent = "ghost"}`},
		{`:call nothing {}`, "No such tool", "nothing"},
		{`:call notes_delete {}`, "No agent uses this tool", "notes_delete"},
		{`:call calculator {expression = 6}`, "Invalid arguments", `{expression = 6}`},
		{`:doc nope`, "No such function", "nope"},
		{`:doc agent.ghost`, "No such block", "agent.ghost"},
		{`:doc`, "Missing name", ":doc"},
		{`:load`, "Missing path", ":load"},
		{`:help frob`, "Unknown command", "frob"},
		{`:continue`, "Nothing to continue", ":continue"},
		{`:abort`, "Nothing to abort", ":abort"},
	} {
		out, exit, diags := s.Handle(context.Background(), tc.in)
		if exit || out != "" {
			t.Errorf("%s: exit %v, output %q", tc.in, exit, out)
		}
		if !diags.HasErrors() {
			t.Errorf("%s: no error", tc.in)
			continue
		}
		d := diags[0]
		if d.Summary != tc.summary {
			t.Errorf("%s: summary %q, want %q\n%s", tc.in, d.Summary, tc.summary, diagText(s, diags))
		}
		if tc.subject != "" && subjectText(tc.in, d) != tc.subject {
			t.Errorf("%s: caret under %q, want %q", tc.in, subjectText(tc.in, d), tc.subject)
		}
		// The session is still usable.
		if got := handle(t, s, "var.topic"); got != "\"tides\"\n" {
			t.Fatalf("after %s: var.topic = %q", tc.in, got)
		}
	}
}

func TestCallFailureKeepsTheGateDecisions(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	line := `:call calculator {expression = "1 +"}`
	out, _, diags := s.Handle(context.Background(), line)
	if !strings.HasPrefix(out, "agent.assistant: allow by policy.rules") {
		t.Errorf("output: %q", out)
	}
	if !diags.HasErrors() || diags[0].Summary != "Tool failed (invalid_arguments)" || subjectText(line, diags[0]) != "calculator" {
		t.Errorf("diagnostics:\n%s", diagText(s, diags))
	}
}

func TestWriteDiagnosticsDrawsACaret(t *testing.T) {
	s := New(Options{})
	_, _, diags := s.Handle(context.Background(), `upper(nope)`)
	want := `Error: Unknown variable

  on <repl> line 1:
   1: upper(nope)
            ^^^^

There is no variable named "nope".

Warning: No configuration loaded

Without a configuration only functions are in scope; load one with :load PATH.

`
	if got := diagText(s, diags); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// A multi-line input: the caret is on the line of the error.
	_, _, diags = s.Handle(context.Background(), "[\n  1,\n  nope,\n]")
	want = `Error: Unknown variable

  on <repl> line 3:
   3:   nope,
        ^^^^

There is no variable named "nope".
`
	if got := diagText(s, diags); !strings.HasPrefix(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestQuit(t *testing.T) {
	s := New(Options{})
	for _, in := range []string{":quit", "  :quit  ", "exit", "quit"} {
		if _, exit, diags := s.Handle(context.Background(), in); !exit || len(diags) > 0 {
			t.Errorf("%q: exit %v, diags %v", in, exit, diags)
		}
	}
	if out, exit, diags := s.Handle(context.Background(), "   "); out != "" || exit || len(diags) > 0 {
		t.Errorf("blank line: %q %v %v", out, exit, diags)
	}
}

func TestWithoutConfiguration(t *testing.T) {
	s := New(Options{})
	if got := handle(t, s, `join("-", ["a", "b"])`); got != "\"a-b\"\n" {
		t.Errorf("join: %q", got)
	}
	for _, in := range []string{":plan", ":tools x", ":gate p {}", ":call t", ":run a x", ":step a x", ":journal"} {
		_, _, diags := s.Handle(context.Background(), in)
		if !diags.HasErrors() || diags[0].Summary != "No configuration loaded" {
			t.Errorf("%s: %v", in, diags)
		}
	}
	if out := handle(t, s, ":doc upper"); !strings.HasPrefix(out, "upper(str string)\n") {
		t.Errorf(":doc upper: %q", out)
	}
}

func TestLoadAndReload(t *testing.T) {
	s, dir := newTestSession(t, Options{})
	out := handle(t, s, ":load "+dir)
	if want := "Loaded " + dir + ": 2 agents, 1 model, 4 tools, 1 MCP server, 1 policy.\n"; out != want {
		t.Errorf(":load: %q, want %q", out, want)
	}

	// A broken edit: :reload reports it and keeps the configuration.
	main := filepath.Join(dir, "main.hcl")
	src, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(src), `default     = "tides"`, `default     = tides`, 1)
	if err := os.WriteFile(main, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, diags := s.Handle(context.Background(), ":reload")
	if !diags.HasErrors() || !strings.Contains(out, "keeps the configuration it had") {
		t.Fatalf(":reload of a broken file: %q %v", out, diags)
	}
	if text := diagText(s, diags); !strings.Contains(text, "main.hcl line 6:\n   6:   default     = tides\n") {
		t.Errorf("the diagnostic should show the file's line:\n%s", text)
	}
	if got := handle(t, s, "var.topic"); got != "\"tides\"\n" {
		t.Errorf("kept configuration: var.topic = %q", got)
	}

	// Fixed, with a new value: :reload picks it up.
	fixed := strings.Replace(string(src), `default     = "tides"`, `default     = "reefs"`, 1)
	if err := os.WriteFile(main, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	handle(t, s, ":reload")
	if got := handle(t, s, "local.greeting"); got != "\"Hello, reefs!\"\n" {
		t.Errorf("after :reload: %q", got)
	}

	_, _, diags = s.Handle(context.Background(), ":load "+filepath.Join(dir, "missing"))
	if !diags.HasErrors() || diags[0].Summary != "Cannot read configuration" {
		t.Errorf(":load of a missing path: %v", diags)
	}
	if s.Loaded() != dir {
		t.Errorf("after a failed :load the session still has %s, says %q", dir, s.Loaded())
	}
}

func TestVarsFromOptions(t *testing.T) {
	s, _ := newTestSession(t, Options{Vars: map[string]string{"topic": "storms"}})
	if got := handle(t, s, "agent.researcher.description"); got != "\"Reads notes about storms\"\n" {
		t.Errorf("got %q", got)
	}
}

func TestPlan(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	full := handle(t, s, ":plan")
	if !strings.HasPrefix(full, "# symbi plan, format 1, source sha256 ") || !strings.Contains(full, "\nagent.researcher {") {
		t.Errorf(":plan:\n%s", full)
	}
	want := `var.topic {  # main.hcl:4:1
  description = "What the researcher looks into"
  name = "topic"
  type = "string"
  value = "tides"
}
`
	if got := handle(t, s, ":plan var.topic"); got != want {
		t.Errorf(":plan var.topic:\n%s", cmp.Diff(want, got))
	}
	agent := handle(t, s, ":plan agent.assistant")
	if !strings.HasPrefix(agent, "agent.assistant {  # main.hcl:") || !strings.Contains(agent, "\n  loop {\n") || !strings.HasSuffix(agent, "\n}\n") {
		t.Errorf(":plan agent.assistant:\n%s", agent)
	}
	if strings.Contains(agent, "agent.researcher") {
		t.Errorf(":plan agent.assistant shows another block:\n%s", agent)
	}
}

func TestTools(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	want := `agent.researcher, after tool_profile.readonly (include read_* calculator notes_*; exclude *_delete):
  calculator     builtin calculator                effect none  approval policy  Evaluate an arithmetic expression
  read_notes     builtin read_file                 effect read  approval policy  Read a note from the workspace
  mcp_server.fs  MCP server symbi-test-mcp-server  effect read                   tools listed when the server starts, then filtered by the profile
removed by the profile: notes_delete
`
	if got := handle(t, s, ":tools researcher"); got != want {
		t.Errorf(":tools researcher:\n%s", cmp.Diff(want, got))
	}
	want = `agent.assistant (no tool_profile):
  calculator   builtin calculator  effect none   approval policy  Evaluate an arithmetic expression
  write_notes  builtin write_file  effect write  approval policy  Write a note into the workspace
`
	if got := handle(t, s, ":tools agent.assistant"); got != want {
		t.Errorf(":tools agent.assistant:\n%s", cmp.Diff(want, got))
	}
}

func TestGate(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	for _, tc := range []struct{ in, want string }{
		{`:gate policy.rules {type = "tool_call", tool = "shell", arguments = {cmd = "sudo ls"}}`, `decision  deny
reason    tool_call "shell" matches deny rule "shell:cmd=sudo*"
engine    rules
time      <dur>
agent     agent.assistant
`},
		{`:gate rules {tool = tool.calculator, arguments = {expression = "6 * 7"}}`, `decision  allow
reason    tool_call "calculator" matches allow rule "calculator"
engine    rules
time      <dur>
agent     agent.assistant
`},
		{`:gate rules {tool = "write_notes", agent = agent.researcher}`, `decision  ask
reason    tool_call "write_notes" matches ask rule "write_*"
engine    rules
time      <dur>
agent     agent.researcher
`},
		{`:gate rules {type = "respond", content = "hi"}`, `decision  not_applicable
reason    no rule matches respond
engine    rules
time      <dur>
agent     agent.assistant
`},
		{":gate policy.rules {\n  tool      = \"calculator\"\n  arguments = {expression = \"${local.limits[0]} / 0\"}\n}", `decision  deny
reason    tool_call "calculator" matches deny rule "calculator:expression=*/ 0*"
engine    rules
time      <dur>
agent     agent.assistant
`},
	} {
		if got := normalize(handle(t, s, tc.in)); got != tc.want {
			t.Errorf("%s:\n%s", tc.in, cmp.Diff(tc.want, got))
		}
	}
}

// approver answers every request the same way and records what it saw.
type approver struct {
	yes  bool
	seen []policy.Request
}

func (a *approver) Approve(_ context.Context, req policy.Request) (policy.ApprovalRecord, error) {
	a.seen = append(a.seen, req)
	return policy.ApprovalRecord{ID: req.ID, Approved: a.yes, By: "tester", Via: "terminal"}, nil
}

func TestCall(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	want := `agent.assistant: allow by policy.rules (rules): tool_call "calculator" matches allow rule "calculator"
agent.researcher: allow by policy.rules (rules): tool_call "calculator" matches allow rule "calculator"
42
`
	if got := handle(t, s, `:call calculator {expression = "6*7"}`); got != want {
		t.Errorf(":call calculator:\n%s", cmp.Diff(want, got))
	}
	want = `agent.assistant: deny by policy.rules (rules): tool_call "calculator" matches deny rule "calculator:expression=*/ 0*"
not run
`
	if got := handle(t, s, `:call tool.calculator {expression = "1 / 0"}`); got != want {
		t.Errorf(":call 1 / 0:\n%s", cmp.Diff(want, got))
	}
	if got := handle(t, s, `:call read_notes {path = "notes.txt"}`); !strings.HasSuffix(got, "\nhello notes\n") {
		t.Errorf(":call read_notes: %q", got)
	}
	// As in a run, the policies decide on the canonical path, and the
	// configuration's own files are out of reach.
	if got := handle(t, s, `:call read_notes {path = "./sub/../notes.txt"}`); !strings.HasSuffix(got, "\nhello notes\n") {
		t.Errorf(":call read_notes ./sub/../notes.txt: %q", got)
	}
	if _, _, diags := s.Handle(context.Background(), `:call read_notes {path = "main.hcl"}`); len(diags) != 1 || diags[0].Summary != "Invalid arguments" || !strings.Contains(diags[0].Detail, "is a file of the configuration") {
		t.Errorf(":call read_notes main.hcl: %v, want a protected-path refusal", diags)
	}
	want = `agent.assistant: ask by policy.rules (rules): tool_call "write_notes" matches ask rule "write_*"
not run: a person must approve it, and this session has no one to ask (input is not a terminal)
`
	if got := handle(t, s, `:call write_notes {path = "out.txt", content = "x"}`); got != want {
		t.Errorf(":call write_notes without an approver:\n%s", cmp.Diff(want, got))
	}
}

func TestCallAsksThePerson(t *testing.T) {
	for _, yes := range []bool{true, false} {
		ap := &approver{yes: yes}
		s, dir := newTestSession(t, Options{Approver: ap})
		out := handle(t, s, `:call write_notes {path = "out.txt", content = "written"}`)
		if len(ap.seen) != 1 || ap.seen[0].Action.Tool != "write_notes" || ap.seen[0].Agent != "assistant" {
			t.Fatalf("approver saw %+v", ap.seen)
		}
		_, err := os.Stat(filepath.Join(dir, "out.txt"))
		if yes {
			if err != nil || !strings.Contains(out, "agent.assistant: allow by person") {
				t.Errorf("approved call: %q, file: %v", out, err)
			}
		} else if err == nil || !strings.HasSuffix(out, "agent.assistant: deny by person: decided by tester via terminal\nnot run\n") {
			t.Errorf("denied call: %q, file written: %v", out, err == nil)
		}
	}
}

func TestDoc(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	for _, tc := range []struct{ in, want string }{
		{":doc upper", "upper(str string)\n  Returns the given string with all Unicode letters translated to their uppercase equivalents.\n"},
		{":doc upper()", "upper(str string)\n  Returns the given string with all Unicode letters translated to their uppercase equivalents.\n"},
		{":doc agent.researcher", "agent.researcher\n  Reads notes about tides\n  model model.offline, mode react, declared at main.hcl:85:1\n"},
		{":doc var.topic", "var.topic\n  What the researcher looks into\n  type string, declared at main.hcl:4:1\n"},
		{":doc var.input", "var.input\n  (no description)\n  type string, declared at main.hcl:10:1\n"},
		{":doc budget.standard", "budget.standard has no description; :plan budget.standard shows its settings.\n"},
	} {
		if got := handle(t, s, tc.in); got != tc.want {
			t.Errorf("%s:\n%s", tc.in, cmp.Diff(tc.want, got))
		}
	}
	tool := handle(t, s, ":doc tool.calculator")
	if !strings.HasPrefix(tool, "tool.calculator\n  Evaluate an arithmetic expression\n  builtin calculator, effect none, declared at main.hcl:25:1\n  parameters: {") {
		t.Errorf(":doc tool.calculator:\n%s", tool)
	}
}

func TestFuncsListsEveryFunction(t *testing.T) {
	s := New(Options{})
	out := handle(t, s, ":funcs")
	funcs := s.functions()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(funcs) {
		t.Fatalf(":funcs printed %d lines for %d functions", len(lines), len(funcs))
	}
	for i, f := range funcs {
		if !strings.HasPrefix(lines[i], f.Signature()+" ") {
			t.Errorf("line %d is %q, want the signature %s", i, lines[i], f.Signature())
		}
	}
	for _, sig := range []string{"upper(str string)", "env(name string, default... string)"} {
		if !strings.Contains(out, sig) {
			t.Errorf(":funcs lacks %s", sig)
		}
	}
}

func TestHelp(t *testing.T) {
	s := New(Options{})
	out := handle(t, s, ":help")
	for _, c := range commandTable() {
		if !strings.Contains(out, "\n  "+c.name) {
			t.Errorf(":help does not list %s", c.name)
		}
	}
	if got := handle(t, s, ":help plan"); got != ":plan [ADDR]\n  the execution plan as a tree, or one block of it (agent.x, tool.y, var.z, settings)\n" {
		t.Errorf(":help plan: %q", got)
	}
}

func TestNeedsMore(t *testing.T) {
	s := New(Options{})
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"1 + 2", false},
		{"{", true},
		{"{a = 1}", false},
		{"upper(", true},
		{"[1,\n 2,", true},
		{"[1,\n 2]", false},
		{"{\n  a = [1, 2\n", false}, // a blank last line ends the input
		{"{\n  a = {b = 1}", true},
		{":gate policy.rules {", true},
		{":gate policy.rules {\n  tool = \"x\"\n}", false},
		{"<<EOT\nabc", true},
		{"<<EOT\nabc\nEOT", false},
		{`"${`, true},
		{`"${var.x}"`, false},
		{"}", false}, // unbalanced: let Handle report it
		{"(]", false},
	} {
		if got := s.NeedsMore(tc.in); got != tc.want {
			t.Errorf("NeedsMore(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestComplete(t *testing.T) {
	s, _ := newTestSession(t, Options{})
	for _, tc := range []struct {
		in    string
		start int
		want  []string
	}{
		{":pl", 0, []string{":plan"}},
		{":", 0, commandNames()},
		{"  :to", 2, []string{":tools"}},
		{":plan agent.r", 6, []string{"agent.researcher"}},
		{":plan var.", 6, []string{"var.input", "var.topic"}},
		{":tools ", 7, []string{"agent.assistant", "agent.researcher"}},
		{":gate po", 6, []string{"policy.rules"}},
		{":call tool.", 6, []string{"tool.calculator", "tool.notes_delete", "tool.read_notes", "tool.write_notes"}},
		{":gate policy.rules {tool = tool.ca", 27, []string{"tool.calculator"}},
		{":help :re", 6, []string{":reload"}},
		{":help re", 6, []string{"reload"}},
		{":doc uppe", 5, []string{"upper"}},
		{"agent.assistant.lo", 0, []string{"agent.assistant.loop"}},
		{"agent.assistant.loop.m", 0, []string{"agent.assistant.loop.max_concurrent_tools", "agent.assistant.loop.max_delegation_depth", "agent.assistant.loop.max_output_tokens", "agent.assistant.loop.mode"}},
		{"agent.", 0, []string{"agent.assistant", "agent.researcher"}},
		{"var.t", 0, []string{"var.topic"}},
		{"local.", 0, []string{"local.greeting", "local.limits"}},
		{"budget.standard.max_i", 0, []string{"budget.standard.max_iterations"}},
		{"upper(lo", 6, []string{"local.", "log(", "lookup(", "lower("}},
		{"ag", 0, []string{"agent."}},
		{"nothing.x", 0, nil},
		{":run agent.assistant What is", 28, nil},
	} {
		start, got := s.CompleteAt(tc.in)
		if start != tc.start || !cmp.Equal(got, tc.want) {
			t.Errorf("CompleteAt(%q) = %d %q, want %d %q", tc.in, start, got, tc.start, tc.want)
		}
	}
	if got := s.Complete("var.t"); !cmp.Equal(got, []string{"var.topic"}) {
		t.Errorf("Complete: %q", got)
	}
}

func TestCompletePaths(t *testing.T) {
	s, dir := newTestSession(t, Options{})
	want := []string{filepath.Join(dir, "main.hcl"), filepath.Join(dir, "scripts") + "/"}
	if _, got := s.CompleteAt(":load " + dir + "/"); !cmp.Equal(got, want) {
		t.Errorf("paths: %q, want %q", got, want)
	}
}

func TestPrompt(t *testing.T) {
	s := New(Options{})
	if s.Prompt() != "> " || s.ContinuationPrompt() != "... " {
		t.Errorf("prompts %q %q", s.Prompt(), s.ContinuationPrompt())
	}
}

func TestSensitiveVariablesAreNotShown(t *testing.T) {
	dir := t.TempDir()
	src := `
variable "token" {
  type      = string
  default   = "s3cret"
  sensitive = true
}

variable "name" {
  type    = string
  default = "open"
}

locals {
  header = "Bearer ${var.token}"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Options{})
	if diags := s.Load(dir); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for in, want := range map[string]string{
		"var.token":                  "(sensitive value)\n",
		"upper(var.token)":           "(sensitive value)\n",
		"var":                        "(sensitive value)\n",
		"var.name":                   "\"open\"\n",
		"length(var.token) > 0":      "(sensitive value)\n",
		`"${var.name}-${var.token}"`: "(sensitive value)\n",
		"local.header":               "(sensitive value)\n",
		"length(local.header)":       "(sensitive value)\n",
	} {
		if got := handle(t, s, in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

// TestGateEveryEngine decides through OPA and Cedar, on the policy pack of
// examples/security.hcl, as a security team would try it.
func TestGateEveryEngine(t *testing.T) {
	s := New(Options{})
	if diags := s.Load("../examples/security.hcl"); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, tc := range []struct{ in, want string }{
		{`:gate policy.gate {tool = "shell", arguments = {cmd = "ls -la"}}`, `decision  ask
reason    shell is destructive: a person must approve it
engine    opa
time      <dur>
agent     agent.researcher
`},
		{`:gate policy.gate {tool = "shell", arguments = {cmd = "curl x | sh"}}`, `decision  deny
reason    shell: "curl x | sh" contains a shell metacharacter (one of ; | & ` + "`" + ` $ > <)
engine    opa
time      <dur>
agent     agent.researcher
`},
		{`:gate policy.grants {tool = "shell", arguments = {cmd = "ls"}}`, `decision  deny
reason    only the ops team may run destructive tools
engine    cedar
time      <dur>
agent     agent.researcher
`},
		{`:gate grants {tool = tool.calculator, arguments = {expression = "1"}}`, `decision  allow
reason    permitted by Cedar policy research-reads (policies/cedar/grants.cedar:5)
engine    cedar
time      <dur>
agent     agent.researcher
`},
	} {
		if got := normalize(handle(t, s, tc.in)); got != tc.want {
			t.Errorf("%s:\n%s", tc.in, cmp.Diff(tc.want, got))
		}
	}
}

func TestToolsListsServersAndDelegates(t *testing.T) {
	s := New(Options{})
	if diags := s.Load("../examples/mcp.hcl"); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	out := handle(t, s, ":tools browser")
	for _, want := range []string{
		"  read_text        mcp mcp_server.fs ",
		"  mcp_server.fs    MCP server npx -y @modelcontextprotocol/server-filesystem@2026.8.31 . ",
		// A deferred URL shows its expression: env() is not read here.
		`  mcp_server.docs  MCP server env("DOCS_MCP_URL", "http://127.0.0.1:9000/mcp") `,
	} {
		if !strings.Contains(out, want) {
			t.Errorf(":tools browser lacks %q:\n%s", want, out)
		}
	}
	if diags := s.Load("../examples/delegation.hcl"); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if out := handle(t, s, ":tools lead"); !strings.Contains(out, "  delegate  engine  effect none") || !strings.Contains(out, "hands a task to agent.researcher") {
		t.Errorf(":tools lead:\n%s", out)
	}
	if got := handle(t, s, ":plan settings"); got != "settings {\n  journal_sync = \"background\"\n  state_dir = \".symbi\"\n  workspace = \".\"\n}\n" {
		t.Errorf(":plan settings: %q", got)
	}
}
