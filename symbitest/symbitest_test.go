package symbitest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/provider/cassette"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// noEnv is an environment with nothing in it: no SYMBI_VAR_* and no key
// of the machine running the tests reaches them.
func noEnv(string) (string, bool) { return "", false }

// extract writes the files of testdata archives into a new directory.
func extract(t *testing.T, archives ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, a := range archives {
		ar, err := txtar.ParseFile(filepath.Join("testdata", a))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			write(t, dir, f.Name, string(f.Data))
		}
	}
	return dir
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, files []string, opts LoadOptions) *Suite {
	t.Helper()
	if opts.LookupEnv == nil {
		opts.LookupEnv = noEnv
	}
	s, diags := Load(context.Background(), files, opts)
	if diags.HasErrors() {
		var b strings.Builder
		hcl.NewDiagnosticTextWriter(&b, s.Sources, 0, false).WriteDiagnostics(diags)
		t.Fatalf("Load:\n%s", b.String())
	}
	return s
}

// runAll runs every run of the suite and returns the results by run name.
func runAll(t *testing.T, s *Suite, opts RunOptions) (*Report, map[string]*RunResult) {
	t.Helper()
	runs, err := s.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = noEnv
	}
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(t.TempDir(), "state")
	}
	rep := s.Run(context.Background(), runs, opts)
	byName := map[string]*RunResult{}
	for _, rr := range rep.Results {
		byName[rr.Run.Name] = rr
	}
	return rep, byName
}

func text(s *Suite, rr *RunResult) string {
	var b strings.Builder
	(&TextPrinter{W: &b, Sources: s.Sources}).Result(rr)
	return b.String()
}

var markerRE = regexp.MustCompile(`#\s*(ERROR|WARNING):\s*(.+?)\s*$`)

// TestErrorMarkers loads testdata/errors.txtar's test files against
// agent.txtar's configuration: every "# ERROR: <summary>" marker has an
// error of that summary on its line, every "# WARNING:" a warning, and no
// other error is reported; every diagnostic has a range.
func TestErrorMarkers(t *testing.T) {
	dir := extract(t, "agent.txtar", "errors.txtar")
	files, _ := filepath.Glob(filepath.Join(dir, "*"+lang.TestFileSuffix))
	if len(files) < 3 {
		t.Fatalf("%d test files", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, _ := os.ReadFile(path)
			type want struct {
				sev     hcl.DiagnosticSeverity
				line    int
				summary string
			}
			var wants []want
			sc := bufio.NewScanner(bytes.NewReader(src))
			for line := 1; sc.Scan(); line++ {
				if m := markerRE.FindStringSubmatch(sc.Text()); m != nil {
					sev := hcl.DiagError
					if m[1] == "WARNING" {
						sev = hcl.DiagWarning
					}
					wants = append(wants, want{sev, line, m[2]})
				}
			}
			_, diags := Load(context.Background(), []string{path}, LoadOptions{LookupEnv: noEnv})
			matched := make([]bool, len(diags))
			for _, w := range wants {
				found := false
				for i, d := range diags {
					if d.Severity == w.sev && d.Subject != nil && d.Subject.Filename == path && d.Subject.Start.Line == w.line && d.Summary == w.summary {
						matched[i], found = true, true
					}
				}
				if !found {
					t.Errorf("line %d: want %q; got:\n%s", w.line, w.summary, listDiags(diags))
				}
			}
			for i, d := range diags {
				if d.Subject == nil {
					t.Errorf("diagnostic without a range: %s: %s", d.Summary, d.Detail)
				}
				if d.Severity == hcl.DiagError && !matched[i] {
					t.Errorf("unexpected error: %s", describe(d))
				}
			}
		})
	}
}

func describe(d *hcl.Diagnostic) string {
	pos := "?"
	if d.Subject != nil {
		pos = fmt.Sprintf("%s:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line)
	}
	return fmt.Sprintf("%s %q: %s", pos, d.Summary, d.Detail)
}

func listDiags(ds hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\t" + describe(d) + "\n")
	}
	return b.String()
}

const outcomes = `config = "agent.hcl"

run "multiplies" {
  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The answer names the product."
  }
  assert {
    condition     = run.status == "completed" && run.iterations == 2 && run.usage.model_calls == 2 && run.usage.tool_calls == 1
    error_message = "Two model calls around one tool call."
  }
  assert {
    condition     = length(run.tool_calls) == 1 && run.tool_calls[0].name == "calculator" && run.tool_calls[0].decision == "allow" && run.tool_calls[0].result == "42"
    error_message = "One allowed calculator call that answered 42."
  }
  assert {
    condition     = jsondecode(run.tool_calls[0].arguments).expression == "6 * 7"
    error_message = "The arguments are JSON."
  }
  assert {
    condition     = anytrue([for e in run.journal : e.event == "terminated" && jsondecode(e.data).reason == "completed"])
    error_message = "The journal ends the run."
  }
  assert {
    condition     = alltrue([for d in run.decisions : d.decision == "allow"]) && length(run.decisions) == 2
    error_message = "The call and the answer are allowed."
  }
}

run "wrong_answer" {
  assert {
    condition     = run.answer == "43"
    error_message = "Expected 43, got ${run.answer}."
  }
}

run "denied_call" {
  input = "What is 1 / 0?"
  assert {
    condition     = run.tool_calls[0].decision == "deny" && regex("denied|deny", run.tool_calls[0].reason) != ""
    error_message = "The division by zero is denied."
  }
  assert {
    condition     = run.answer == "I could not compute it."
    error_message = "The model gives up."
  }
}

run "stopped" {
  budget {
    max_iterations = 1
  }
  expect_failures = ["max_iterations", "budget_exceeded"]
  assert {
    condition     = run.answer == "" && run.iterations == 1
    error_message = "No answer after one iteration."
  }
}

run "not_stopped" {
  expect_failures = ["policy_denial"]
}

run "from_variable" {
  variables {
    input = "What is 1 / 0?"
  }
  assert {
    condition     = run.tool_calls[0].decision == "deny"
    error_message = "The variable's input reached the run."
  }
}

run "fixed_result" {
  input = "Tell me about otters"
  override_tool {
    target = tool.search
    result = "otters eat urchins"
  }
  assert {
    condition     = run.tool_calls[0].result == "otters eat urchins"
    error_message = "The fixed result answered."
  }
}

run "fixed_error" {
  input = "Tell me about otters"
  override_tool {
    target = tool.search
    error  = "the index is down"
  }
  assert {
    condition     = strcontains(run.tool_calls[0].error, "the index is down") && run.tool_calls[0].result == ""
    error_message = "The fixed error answered."
  }
}

run "scripted_command" {
  input = "Tell me about otters"
  override_tool {
    target  = tool.search
    command = ["sh", "-c", "printf 'asked: '; cat"]
  }
  assert {
    condition     = run.tool_calls[0].result == "asked: {\"q\":\"otters\"}"
    error_message = "The command got the arguments on stdin: ${run.tool_calls[0].result}"
  }
}

run "other_script" {
  script = "other.json"
  assert {
    condition     = run.answer == "from the other script"
    error_message = "The run's script answered."
  }
}
`

// TestRunOutcomes runs one of each kind of run through the engine and
// checks how each is judged and what its result holds.
func TestRunOutcomes(t *testing.T) {
	dir := extract(t, "agent.txtar")
	path := write(t, dir, "outcomes.symbitest.hcl", outcomes)
	s := load(t, []string{path}, LoadOptions{})
	rep, got := runAll(t, s, RunOptions{Parallel: 3})
	want := map[string]Status{
		"multiplies": Pass, "wrong_answer": Fail, "denied_call": Pass, "stopped": Pass, "not_stopped": Fail,
		"from_variable": Pass, "fixed_result": Pass, "fixed_error": Pass, "scripted_command": Pass, "other_script": Pass,
	}
	for name, st := range want {
		rr := got[name]
		if rr == nil {
			t.Errorf("no result for %s", name)
			continue
		}
		if rr.Status != st {
			t.Errorf("%s: %s, want %s\n%s", name, rr.Status, st, text(s, rr))
		}
		if len(rr.RunIDs()) != 1 {
			t.Errorf("%s: run ids %v", name, rr.RunIDs())
		}
	}
	if rep.Count(Pass) != 8 || rep.Count(Fail) != 2 || rep.Status() != Fail {
		t.Errorf("report: %d passed, %d failed, status %s", rep.Count(Pass), rep.Count(Fail), rep.Status())
	}
	// Results come in the file's order, whatever order they ran in.
	var order []string
	for _, rr := range rep.Results {
		order = append(order, rr.Run.Name)
	}
	if order[0] != "multiplies" || order[len(order)-1] != "other_script" {
		t.Errorf("order %v", order)
	}

	// A failed assertion: its message, the values of its references, the
	// run to inspect.
	wrong := text(s, got["wrong_answer"])
	for _, w := range []string{
		`run "wrong_answer"... fail (run ` + got["wrong_answer"].RunIDs()[0] + `)`,
		"Error: Test assertion failed",
		`run.answer == "43"`,
		`run.answer as "6 × 7 is 42."`,
		"Expected 43, got 6 × 7 is 42.",
		"Inspect the run: symbi runs show " + got["wrong_answer"].RunIDs()[0] + " --state-dir ",
	} {
		if !strings.Contains(wrong, w) {
			t.Errorf("the failure report lacks %q:\n%s", w, wrong)
		}
	}
	if d := got["not_stopped"].Diagnostics(); len(d) != 1 || d[0].Summary != "Expected failure did not happen" ||
		!strings.Contains(d[0].Detail, "expected to end with policy_denial, but it ended with completed") {
		t.Errorf("not_stopped: %s", listDiags(d))
	}
	// The overridden tool's real command never ran.
	if _, err := os.Stat(filepath.Join(dir, "side_effects.txt")); err == nil {
		t.Error("an overridden tool's real command ran")
	}
}

// TestRepeatPassRate: a run repeated five times whose tool answers
// differently each time passes when the share of passing repetitions
// reaches pass_rate, and says how many passed either way.
func TestRepeatPassRate(t *testing.T) {
	dir := extract(t, "agent.txtar")
	counter := filepath.Join(dir, "count")
	run := func(name, rate string) string {
		return fmt.Sprintf(`
run %q {
  input     = "Tell me about otters"
  repeat    = 5
  pass_rate = %s
  override_tool {
    target  = tool.search
    command = ["sh", "-c", "n=$(cat %s 2>/dev/null || echo 0); echo $((n+1)) > %s; printf %%s $n"]
  }
  assert {
    condition     = run.tool_calls[0].result != "0"
    error_message = "The first search finds nothing."
  }
}
`, name, rate, counter, counter)
	}
	path := write(t, dir, "repeat.symbitest.hcl", `config = "agent.hcl"`+run("lenient", "0.8"))
	s := load(t, []string{path}, LoadOptions{})
	_, got := runAll(t, s, RunOptions{Parallel: 1})
	if rr := got["lenient"]; rr.Status != Pass || rr.Passed != 4 || len(rr.RunIDs()) != 5 {
		t.Errorf("lenient: %s, %d passed, %d runs", rr.Status, rr.Passed, len(rr.RunIDs()))
	} else if line := text(s, rr); !strings.Contains(line, "pass (4 of 5 repetitions passed, 80%; needs 80%)") {
		t.Errorf("lenient: %s", line)
	}

	os.Remove(counter)
	path = write(t, dir, "strict.symbitest.hcl", `config = "agent.hcl"`+run("strict", "0.9"))
	s = load(t, []string{path}, LoadOptions{})
	_, got = runAll(t, s, RunOptions{Parallel: 1})
	rr := got["strict"]
	if rr.Status != Fail || rr.Passed != 4 {
		t.Fatalf("strict: %s, %d passed", rr.Status, rr.Passed)
	}
	out := text(s, rr)
	for _, w := range []string{"fail (4 of 5 repetitions passed, 80%; needs 90%", "Pass rate not reached", "4 of 5 repetitions passed (80%); the run needs 90%.", "The first search finds nothing."} {
		if !strings.Contains(out, w) {
			t.Errorf("strict report lacks %q:\n%s", w, out)
		}
	}
}

// cassetteAgent is an openai model at a fake server, the way a user's
// agent points at a real provider.
const cassetteAgent = `
variable "base_url" {
  type = string
}

model "remote" {
  provider    = "openai"
  name        = "gpt-test"
  base_url    = var.base_url
  api_key_env = "TEST_API_KEY"
}

tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "assistant" {
  model    = model.remote
  system   = "Use the calculator, then answer in one sentence."
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`

// calculatorServer is a model that calls the calculator, then answers with
// what it returned.
func calculatorServer(t *testing.T) *fakeserver.Server {
	return fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Chat.Messages
		if last := msgs[len(msgs)-1]; last.Role == "tool" {
			return fakeserver.Text("6 × 7 is ", last.Content, ".")
		}
		return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "call_1", Name: "calculator", Arguments: `{"expression":"6 * 7"}`}}}
	}))
}

// TestCassetteFlow is the flow docs/testing.md walks through, at the
// package's level: -update records a missing cassette from the live
// model; the test then passes offline; a changed system prompt fails with
// a diff of the requests; -update records it again, and it passes.
func TestCassetteFlow(t *testing.T) {
	srv := calculatorServer(t)
	dir := t.TempDir()
	write(t, dir, "agent.hcl", cassetteAgent)
	path := write(t, dir, "agent.symbitest.hcl", fmt.Sprintf(`
variables {
  base_url = %q
}

run "multiplies" {
  input    = "What is 6 * 7?"
  cassette = "cassettes/multiplies.json"
  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The answer names the product."
  }
}
`, srv.URL()))
	env := func(n string) (string, bool) { return "sk-test-cassette-key", n == "TEST_API_KEY" }
	cas := filepath.Join(dir, "cassettes", "multiplies.json")
	os.MkdirAll(filepath.Dir(cas), 0o755)

	// Without the cassette, and without -update, the test is invalid.
	if _, diags := Load(context.Background(), []string{path}, LoadOptions{LookupEnv: noEnv}); !diags.HasErrors() || diags[0].Summary != "Cassette not found" {
		t.Fatalf("a missing cassette: %v", diags)
	}
	s := load(t, []string{path}, LoadOptions{Update: true})
	_, got := runAll(t, s, RunOptions{Update: true, LookupEnv: env})
	if rr := got["multiplies"]; rr.Status != Pass || !rr.Updated {
		t.Fatalf("recording: %s, updated %t\n%s", rr.Status, rr.Updated, text(s, rr))
	}
	recorded, err := os.ReadFile(cas)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(recorded, []byte("sk-test-cassette-key")) {
		t.Error("the cassette holds the API key")
	}
	calls := len(srv.Requests())

	// Offline, no key: replayed.
	s = load(t, []string{path}, LoadOptions{})
	_, got = runAll(t, s, RunOptions{})
	if rr := got["multiplies"]; rr.Status != Pass || rr.Updated {
		t.Fatalf("replay: %s\n%s", rr.Status, text(s, rr))
	}
	if len(srv.Requests()) != calls {
		t.Errorf("the replay called the model")
	}

	// A changed system prompt.
	write(t, dir, "agent.hcl", strings.Replace(cassetteAgent, "answer in one sentence", "answer in one word", 1))
	s = load(t, []string{path}, LoadOptions{})
	_, got = runAll(t, s, RunOptions{})
	rr := got["multiplies"]
	if rr.Status != Fail {
		t.Fatalf("a changed prompt: %s", rr.Status)
	}
	out := text(s, rr)
	for _, w := range []string{
		"Error: Request differs from the cassette",
		"model.remote: the request of call 1 differs from exchange 1 of " + cas,
		"messages[0] (the system prompt) differs:",
		"- Use the calculator, then answer in one sentence.",
		"+ Use the calculator, then answer in one word.",
		"record the cassette again with symbi test -update",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the mismatch report lacks %q:\n%s", w, out)
		}
	}

	// -update records it again, and the test passes offline.
	s = load(t, []string{path}, LoadOptions{Update: true})
	if _, got = runAll(t, s, RunOptions{Update: true, LookupEnv: env}); got["multiplies"].Status != Pass || !got["multiplies"].Updated {
		t.Fatalf("re-recording: %s", text(s, got["multiplies"]))
	}
	s = load(t, []string{path}, LoadOptions{})
	if _, got = runAll(t, s, RunOptions{}); got["multiplies"].Status != Pass {
		t.Fatalf("replaying the re-recorded cassette: %s", text(s, got["multiplies"]))
	}
	c, err := cassette.Load(cas)
	if err != nil || len(c.Exchanges) != 2 || !strings.Contains(c.Exchanges[0].Request.Messages[0].Content, "one word") {
		t.Errorf("the re-recorded cassette: %v %+v", err, c)
	}
}

// TestSelect: -filter matches a run's name or its file, by glob.
func TestSelect(t *testing.T) {
	dir := extract(t, "agent.txtar")
	a := write(t, dir, "a.symbitest.hcl", "config = \"agent.hcl\"\nrun \"one\" {}\nrun \"two\" {}\n")
	b := write(t, dir, "b.symbitest.hcl", "config = \"agent.hcl\"\nrun \"one_more\" {}\n")
	s := load(t, []string{a, b}, LoadOptions{})
	for _, tc := range []struct {
		filters []string
		want    string
	}{
		{nil, "one two one_more"},
		{[]string{"one*"}, "one one_more"},
		{[]string{"b.symbitest.hcl"}, "one_more"},
		{[]string{"two", "b.*"}, "two one_more"},
		{[]string{"nothing"}, ""},
	} {
		runs, err := s.Select(tc.filters)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range runs {
			names = append(names, r.Name)
		}
		if strings.Join(names, " ") != tc.want {
			t.Errorf("Select(%q) = %v, want %s", tc.filters, names, tc.want)
		}
	}
	if _, err := s.Select([]string{"["}); err == nil {
		t.Error("a malformed pattern was accepted")
	}
}

func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.symbitest.hcl", "a.hcl", "sub/b.symbitest.hcl", ".symbi/c.symbitest.hcl", "node_modules/d.symbitest.hcl", "sub/tests/e.symbitest.hcl"} {
		write(t, dir, f, "")
	}
	got, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, g := range got {
		r, _ := filepath.Rel(dir, g)
		rel = append(rel, filepath.ToSlash(r))
	}
	if strings.Join(rel, " ") != "a.symbitest.hcl sub/b.symbitest.hcl sub/tests/e.symbitest.hcl" {
		t.Errorf("Discover found %v", rel)
	}
	if got, _ := Discover(filepath.Join(dir, "a.hcl")); len(got) != 1 || filepath.Base(got[0]) != "a.symbitest.hcl" {
		t.Errorf("a configuration file's test file: %v", got)
	}
	if _, err := Discover(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing path was accepted")
	}
}

// TestBudgetFieldsCoverTheLanguage: a run's budget block takes every
// attribute of the language's budget block, and each has a place in the
// plan.
func TestBudgetFieldsCoverTheLanguage(t *testing.T) {
	for _, a := range lang.TopLevel()["budget"].Attrs {
		if budgetFields[a] == nil {
			t.Errorf("budget attribute %s cannot be overridden by a run", a)
		}
	}
	if len(budgetFields) != len(lang.TopLevel()["budget"].Attrs) {
		t.Errorf("budgetFields has %d fields, the language %d", len(budgetFields), len(lang.TopLevel()["budget"].Attrs))
	}
}

// TestRunTypeAttributes: the documented attributes of run are the ones
// RunType has.
func TestRunTypeAttributes(t *testing.T) {
	var names []string
	for n := range RunType.AttributeTypes() {
		names = append(names, n)
	}
	slices.Sort(names)
	want := "agent answer decisions duration_ms error id iterations journal limit status tool_calls usage"
	if strings.Join(names, " ") != want {
		t.Errorf("run has %v", names)
	}
}

// TestRunsShareAStoreInTurn: two runs of a configuration with a knowledge
// store, run at once, take turns with the store's file (one process may
// open it at a time) instead of one failing to open it while the other
// holds it longer than the store waits.
func TestRunsShareAStoreInTurn(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "script.json", `{"turns":[{"tool_calls":[{"id":"c1","name":"slow","arguments":{}}]},{"content":"done"}],"on_exhausted":"error"}`)
	write(t, dir, "agent.hcl", `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
knowledge "notes" {
  path = "notes.db"
}
tool "recall" {
  description = "Recall facts"
  builtin     = "recall_knowledge"
}
tool "slow" {
  description = "Takes longer than a store waits for its file"
  command {
    argv = ["sh", "-c", "sleep 2.5; echo slept"]
  }
  effect = "read"
}
policy "rules" {
  rules {
    allow = ["slow", "recall"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.recall, tool.slow]
  policies = [policy.rules]
  knowledge {
    store = knowledge.notes
  }
}
`)
	path := write(t, dir, "agent.symbitest.hcl", `
run "one" {
  input = "x"
  assert {
    condition     = run.answer == "done"
    error_message = "It answers."
  }
}
run "two" {
  input = "x"
  assert {
    condition     = run.answer == "done"
    error_message = "It answers."
  }
}
`)
	s := load(t, []string{path}, LoadOptions{})
	_, got := runAll(t, s, RunOptions{Parallel: 2})
	for _, name := range []string{"one", "two"} {
		if rr := got[name]; rr.Status != Pass {
			t.Errorf("%s: %s\n%s", name, rr.Status, text(s, rr))
		}
	}
}
