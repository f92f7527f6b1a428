package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

const testingDoc = "../docs/testing.md"

// updating reports the package's -update flag (update_flag_test.go), which
// rewrites docs/testing.md's outputs.
func updating() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	v, _ := f.Value.(flag.Getter).Get().(bool)
	return v
}

// docStep is one marked block of docs/testing.md: a file to write, an edit
// to make, a command to run and its output, or a file to show.
type docStep struct {
	kind, arg string // file NAME, edit NAME, run exit=N [env=offline], show NAME
	body      string
	start     int // of body in the document
	end       int
}

var docStepRE = regexp.MustCompile("(?s)<!-- testing.md: (\\w+) ?([^>]*?) -->\n```\\w*\n(.*?)```\n")

func docSteps(doc []byte) []docStep {
	var out []docStep
	for _, m := range docStepRE.FindAllSubmatchIndex(doc, -1) {
		out = append(out, docStep{kind: string(doc[m[2]:m[3]]), arg: string(doc[m[4]:m[5]]), body: string(doc[m[6]:m[7]]), start: m[6], end: m[7]})
	}
	return out
}

// walkthroughModel stands in for OpenAI: it calls the calculator, then
// answers from its result, in a sentence or, when the system prompt asks
// for the number only, with the number.
func walkthroughModel(t *testing.T) *fakeserver.Server {
	return fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Chat.Messages
		last := msgs[len(msgs)-1]
		if last.Role != "tool" {
			return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "call_1", Name: "calculator", Arguments: `{"expression":"6 * 7"}`}}}
		}
		if strings.Contains(msgs[0].Content, "number only") {
			return fakeserver.Text(last.Content)
		}
		return fakeserver.Text("6 × 7 is ", last.Content, ".")
	}))
}

// The parts of an output that differ from run to run.
var (
	runIDRE    = regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{8}`)
	durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(µs|ms|s)\b`)
	jsonMSRE   = regexp.MustCompile(`"duration_ms":\d+`)
)

func normalizeOutput(s string) string {
	s = runIDRE.ReplaceAllString(s, "RUN-ID")
	s = durationRE.ReplaceAllString(s, "DURATION")
	return jsonMSRE.ReplaceAllString(s, `"duration_ms":N`)
}

// splitCommand splits a documented command line into its arguments:
// spaces separate them, double quotes group them.
func splitCommand(line string) []string {
	var args []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

// combined runs the binary in dir with stdout and stderr in one stream,
// as a terminal shows them.
func combined(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, symbiBin, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("symbi %s: still running after %v (hang detector)", strings.Join(args, " "), hangLimit)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// TestTestingDocWalkthrough replays docs/testing.md's walk-through in a
// fresh directory, against a stand-in for OpenAI: it writes the files the
// page shows, makes its edits, runs its commands (offline where the page
// says so: no key, and the provider's address closed) and compares what
// symbi prints, and the cassette it shows, with the page. The API key is
// never in a cassette or an output. With -update the page is rewritten
// from this run.
func TestTestingDocWalkthrough(t *testing.T) {
	doc, err := os.ReadFile(testingDoc)
	if err != nil {
		t.Fatal(err)
	}
	steps := docSteps(doc)
	if len(steps) < 10 {
		t.Fatalf("docs/testing.md has %d marked steps", len(steps))
	}
	const key = "sk-doc-KEY-51c0ffee77aa"
	srv := walkthroughModel(t)
	online := []string{"OPENAI_API_KEY=" + key, "OPENAI_BASE_URL=" + srv.URL()}
	offline := []string{"OPENAI_BASE_URL=http://127.0.0.1:9/v1"} // the discard port: nothing answers
	dir := t.TempDir()
	updated := append([]byte(nil), doc...)
	var replaced []docStep // in document order, with their new bodies
	for i, st := range steps {
		switch st.kind {
		case "file":
			writeFile(t, dir, st.arg, st.body)
		case "edit":
			p := filepath.Join(dir, st.arg)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// The "-" lines are replaced, in order, by the "+" lines.
			var minus, plus []string
			for _, line := range strings.Split(st.body, "\n") {
				switch {
				case strings.HasPrefix(line, "-"):
					minus = append(minus, line[1:])
				case strings.HasPrefix(line, "+"):
					plus = append(plus, line[1:])
				}
			}
			if len(minus) != len(plus) {
				t.Fatalf("step %d: the edit has %d lines out and %d in", i, len(minus), len(plus))
			}
			for k := range minus {
				if !bytes.Contains(b, []byte(minus[k])) {
					t.Fatalf("step %d: %s has no line %q to edit", i, st.arg, minus[k])
				}
				b = bytes.Replace(b, []byte(minus[k]), []byte(plus[k]), 1)
			}
			os.WriteFile(p, b, 0o644)
		case "run":
			lines := strings.SplitN(st.body, "\n", 2)
			cmdLine, ok := strings.CutPrefix(lines[0], "$ symbi ")
			if !ok {
				t.Fatalf("step %d: the block does not start with $ symbi: %q", i, lines[0])
			}
			want := ""
			if len(lines) > 1 {
				want = lines[1]
			}
			env := online
			if strings.Contains(st.arg, "env=offline") {
				env = offline
			}
			calls := len(srv.Requests())
			out, code := combined(t, dir, env, splitCommand(cmdLine)...)
			if strings.Contains(out, key) {
				t.Errorf("step %d: the key is in the output:\n%s", i, out)
			}
			if env[0] == offline[0] && len(srv.Requests()) != calls {
				t.Errorf("step %d: an offline step called the model", i)
			}
			if m := regexp.MustCompile(`exit=(\d+)`).FindStringSubmatch(st.arg); m != nil {
				if wantCode, _ := strconv.Atoi(m[1]); code != wantCode {
					t.Errorf("step %d: symbi %s exited %d, the page says %d:\n%s", i, cmdLine, code, wantCode, out)
				}
			}
			if normalizeOutput(out) != normalizeOutput(want) && !updating() {
				t.Errorf("step %d: symbi %s prints what docs/testing.md does not show (go test ./e2e -run TestTestingDocWalkthrough -update rewrites it):\n%s",
					i, cmdLine, cmp.Diff(normalizeOutput(want), normalizeOutput(out)))
			}
			if normalizeOutput(out) != normalizeOutput(want) {
				// Only what changed is rewritten: run ids and durations
				// alone do not churn the page.
				st.body = lines[0] + "\n" + out
				replaced = append(replaced, st)
			}
		case "show":
			b, err := os.ReadFile(filepath.Join(dir, st.arg))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(key)) {
				t.Errorf("%s holds the key", st.arg)
			}
			if string(b) != st.body && !updating() {
				t.Errorf("%s differs from what docs/testing.md shows:\n%s", st.arg, cmp.Diff(st.body, string(b)))
			}
			if string(b) != st.body {
				st.body = string(b)
				replaced = append(replaced, st)
			}
		default:
			t.Fatalf("step %d: unknown step %q", i, st.kind)
		}
	}
	if updating() {
		for i := len(replaced) - 1; i >= 0; i-- {
			st := replaced[i]
			updated = append(updated[:st.start:st.start], append([]byte(st.body), doc[st.end:]...)...)
			doc = updated
		}
		if err := os.WriteFile(testingDoc, updated, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTestingDocExamples: every test file the page shows parses.
func TestTestingDocExamples(t *testing.T) {
	doc, err := os.ReadFile(testingDoc)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```hcl\n(.*?)```\n").FindAllSubmatch(doc, -1)
	n := 0
	for _, b := range blocks {
		if !bytes.Contains(b[1], []byte("run \"")) {
			continue
		}
		n++
		if _, diags := lang.ParseTestFile(lang.Source{Name: "docs/testing.md", Bytes: b[1]}); diags.HasErrors() {
			t.Errorf("a test file on the page does not parse: %s\n%s", diags.Error(), b[1])
		}
	}
	if n < 5 {
		t.Errorf("only %d test files on the page", n)
	}
}

// echoAgent is an openai agent at var.base_url whose key is E2E_TEST_KEY.
const echoAgent = `
variable "base_url" {
  type = string
}

model "remote" {
  provider    = "openai"
  name        = "e2e-model"
  base_url    = var.base_url
  api_key_env = "E2E_TEST_KEY"
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

agent "keeper" {
  model    = model.remote
  system   = "Answer briefly."
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`

// TestRecordKeepsSecretsOut records, through the binary, a run whose
// model is sent its key, and echoes it (in the answer, URL-encoded in a
// tool call's arguments, and base64-encoded): the cassette holds none of
// them; --replay answers the same run offline without the key, and a run
// whose request changed fails with exit 4 and the diff on stderr.
func TestRecordKeepsSecretsOut(t *testing.T) {
	const key = "sk-e2e-record-8d1f3b5a7c"
	srv := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		auth := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
		msgs := req.Chat.Messages
		if msgs[len(msgs)-1].Role != "tool" {
			return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator",
				Arguments: `{"expression":"6*7","note":"` + strings.ReplaceAll(auth, "-", "%2D") + `"}`}}}
		}
		return fakeserver.Text("42; your key is ", auth, " or ", base64.StdEncoding.EncodeToString([]byte("user:"+auth)))
	}))
	dir := t.TempDir()
	writeFile(t, dir, "agent.hcl", echoAgent)
	env := []string{"E2E_TEST_KEY=" + key, "SYMBI_VAR_base_url=" + srv.URL()}
	r := symbi(t, call{dir: dir, env: env}, "run", "--record", "tapes/c.json", "agent.hcl", "What is 6*7?")
	if r.code != 0 || !strings.Contains(r.stderr, "recorded 2 model exchanges to tapes/c.json") {
		t.Fatalf("recording: %s", r)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tapes", "c.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{key, "8d1f3b5a7c", strings.ReplaceAll(key, "-", "%2D"), base64.StdEncoding.EncodeToString([]byte("user:" + key))[8:30]} {
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("the cassette holds %q:\n%s", leak, b)
		}
	}
	if !bytes.Contains(b, []byte("[redacted]")) {
		t.Errorf("nothing was redacted:\n%s", b)
	}

	// Offline: the server is gone, the key unset.
	srv.Close()
	r = symbi(t, call{dir: dir, env: []string{"SYMBI_VAR_base_url=" + srv.URL()}}, "run", "--replay", "tapes/c.json", "agent.hcl", "What is 6*7?")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "42; your key is [redacted]") {
		t.Fatalf("replay: %s", r)
	}
	writeFile(t, dir, "agent.hcl", strings.Replace(echoAgent, "Answer briefly.", "Answer at length.", 1))
	r = symbi(t, call{dir: dir, env: []string{"SYMBI_VAR_base_url=" + srv.URL()}}, "run", "--replay", "tapes/c.json", "agent.hcl", "What is 6*7?")
	for _, want := range []string{"The run's requests differ from the cassette:", "messages[0] (the system prompt) differs:", "- Answer briefly.", "+ Answer at length.", "--replay tapes/c.json --record-missing"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the mismatch's stderr lacks %q:\n%s", want, r)
		}
	}
	if r.code != 4 {
		t.Errorf("a mismatch exited %d, want 4 (a runtime failure)", r.code)
	}
	r = symbi(t, call{dir: dir, env: []string{"SYMBI_VAR_base_url=" + srv.URL()}}, "run", "--json", "--replay", "tapes/c.json", "agent.hcl", "What is 6*7?")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 4 || r.stderr != "" || !strings.HasPrefix(lines[len(lines)-1], `{"event":"cassette","file":"tapes/c.json","message":"The run's requests differ`) ||
		!strings.Contains(lines[len(lines)-1], `"mismatches":[{"call":1,"diff":"  messages[0] (the system prompt) differs:`) {
		t.Errorf("--json with a mismatch: %s", r)
	}
	if r := symbi(t, call{dir: dir}, "run", "--record", "a.json", "--replay", "b.json", "agent.hcl", "x"); r.code != 2 {
		t.Errorf("--record with --replay: %s", r)
	}
}

// TestSymbiTestExitCodes: 0 passed, 1 failed, 2 invalid (reported with
// file, line and column), no test file, or no run matching -filter; -json
// and -junit-xml report the same.
func TestSymbiTestExitCodes(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("..", "examples"), dir)
	writeFile(t, dir, "quickstart.symbitest.hcl", `run "multiplies" {
  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The product."
  }
}

run "off_by_one" {
  assert {
    condition     = run.answer == "6 × 7 is 43."
    error_message = "Wrong on purpose."
  }
}
`)
	r := symbi(t, call{dir: dir}, "test", "-filter", "multiplies", "quickstart.symbitest.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, `run "multiplies"... pass`) || strings.Contains(r.stdout, "off_by_one") {
		t.Errorf("a passing run: %s", r)
	}
	r = symbi(t, call{dir: dir}, "test", "-junit-xml", "out/report.xml", "quickstart.symbitest.hcl")
	if r.code != 1 || !strings.Contains(r.stdout, "Failure! 1 passed, 1 failed.") || !strings.Contains(r.stdout, `with run.answer as "6 × 7 is 42."`) {
		t.Errorf("a failing run: %s", r)
	}
	xmlOut, err := os.ReadFile(filepath.Join(dir, "out", "report.xml"))
	if r.code != 1 || err != nil || !bytes.Contains(xmlOut, []byte(`<testsuite name="quickstart.symbitest.hcl"`)) || !bytes.Contains(xmlOut, []byte(`<failure message="Wrong on purpose." type="assertion">`)) {
		t.Errorf("-junit-xml: %v\n%s\n%s", err, r, xmlOut)
	}
	r = symbi(t, call{dir: dir}, "test", "-json", "quickstart.symbitest.hcl")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 1 || len(lines) != 3 || !strings.Contains(lines[2], `"type":"summary","status":"fail","passed":1,"failed":1`) {
		t.Errorf("-json: %s", r)
	}

	writeFile(t, dir, "broken.symbitest.hcl", "config = \"quickstart.hcl\"\nrun \"typo\" {\n  agent = agent.asistant\n}\n")
	r = symbi(t, call{dir: dir}, "test", "broken.symbitest.hcl")
	if r.code != 2 || !strings.Contains(r.stderr, "on broken.symbitest.hcl line 3, in run \"typo\":") || !strings.Contains(r.stderr, "Did you mean agent.assistant?") || r.stdout != "" {
		t.Errorf("an invalid test: %s", r)
	}
	r = symbi(t, call{dir: dir}, "validate", "broken.symbitest.hcl")
	if r.code != 2 || !strings.Contains(r.stderr, "Reference to undeclared agent") {
		t.Errorf("validate of an invalid test file: %s", r)
	}
	r = symbi(t, call{dir: dir}, "validate", "-json", "broken.symbitest.hcl")
	if r.code != 2 || !strings.Contains(r.stdout, `"filename": "broken.symbitest.hcl"`) || !strings.Contains(r.stdout, `"line": 3`) {
		t.Errorf("validate -json of an invalid test file: %s", r)
	}
	r = symbi(t, call{dir: dir}, "validate", "quickstart.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, "The tests are valid: 1 test file, 2 runs.") {
		t.Errorf("validate of a configuration with a test file: %s", r)
	}
	r = symbi(t, call{dir: dir}, "test", "-filter", "nothing", "quickstart.symbitest.hcl")
	if r.code != 2 || !strings.Contains(r.stderr, "no run matches -filter nothing") {
		t.Errorf("a filter that matches nothing: %s", r)
	}
	empty := t.TempDir()
	if r := symbi(t, call{dir: empty}, "test"); r.code != 2 || !strings.Contains(r.stderr, "no test files (*.symbitest.hcl) under .") {
		t.Errorf("no test files: %s", r)
	}
}

// TestRunsExport turns a finished run into a cassette and a script through
// the binary, and tests against the exported cassette: -update writes the
// requests in without a model, and the test then passes offline.
func TestRunsExport(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, filepath.Join("..", "examples"), dir)
	r := symbi(t, call{dir: dir}, "run", "quickstart.hcl")
	if r.code != 0 {
		t.Fatal(r)
	}
	r = symbi(t, call{dir: dir}, "runs", "export", "latest", "--state-dir", ".symbi", "--cassette", "seen.json", "--script", "seen_script.json")
	if r.code != 0 || !strings.Contains(r.stderr, "exported 2 model exchanges of run") {
		t.Fatalf("export: %s", r)
	}
	writeFile(t, dir, "quickstart.symbitest.hcl", `run "as_seen" {
  cassette = "seen.json"
  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The run as it was seen."
  }
}

run "as_scripted" {
  script = "seen_script.json"
  assert {
    condition     = run.answer == "6 × 7 is 42."
    error_message = "The run as it was scripted."
  }
}
`)
	r = symbi(t, call{dir: dir}, "test", "-update", "quickstart.symbitest.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, `run "as_seen"... pass (cassette seen.json recorded)`) {
		t.Fatalf("pinning the exported cassette: %s", r)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "seen.json"))
	if bytes.Count(b, []byte(`"request_digest"`)) != 2 {
		t.Errorf("the requests were not written in:\n%s", b)
	}
	if r := symbi(t, call{dir: dir}, "test", "quickstart.symbitest.hcl"); r.code != 0 {
		t.Errorf("testing against the exported cassette: %s", r)
	}
	if r := symbi(t, call{dir: dir}, "runs", "export", "latest", "--state-dir", ".symbi"); r.code != 2 {
		t.Errorf("export without a format: %s", r)
	}
}

// examplesCopy copies examples/ and the MCP test server's directory (the
// MCP examples start it by a relative path) into a temporary directory,
// so runs write nothing into the repository.
func examplesCopy(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	copyTree(t, filepath.Join("..", "examples"), filepath.Join(root, "examples"))
	if st, err := os.Stat(filepath.Join("..", "testdata", "mcp", "node_modules")); err == nil && st.IsDir() {
		if err := os.Symlink(mustAbs(t, filepath.Join("..", "testdata")), filepath.Join(root, "testdata")); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "examples")
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExampleCassettes records examples/anthropic.symbitest.hcl's cassette
// from the fake server's Messages API (Claude thinks, calls the
// calculator, answers) with symbi test -update, and compares it with the
// committed one: a change in what the engine sends, or in how a cassette is
// written, shows here as a diff. With -update the recording replaces the
// committed cassette.
func TestExampleCassettes(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Anthropic.Messages
		if last := msgs[len(msgs)-1]; len(last.Content) > 0 && last.Content[0].Type == "tool_result" {
			return fakeserver.Reply{Chunks: []string{"17 × 23 ", "is 391."}, Usage: &provider.Usage{PromptTokens: 1200, CompletionTokens: 12, CacheReadTokens: 900}}
		}
		return fakeserver.Reply{
			Reasoning: "17 * 23 needs the calculator.",
			ToolCalls: []fakeserver.ToolCall{{ID: "toolu_example_1", Name: "calculator", Arguments: `{"expression":"17 * 23"}`}},
			Usage:     &provider.Usage{PromptTokens: 1000, CompletionTokens: 50, CacheWriteTokens: 900},
		}
	}))
	dir := examplesCopy(t)
	os.Remove(filepath.Join(dir, "cassettes", "anthropic.json"))
	env := []string{"ANTHROPIC_BASE_URL=" + srv.AnthropicURL(), "ANTHROPIC_API_KEY=" + anthropicTestKey}
	r := symbi(t, call{dir: dir, env: env}, "test", "-update", "-state-dir", filepath.Join(t.TempDir(), "state"), "anthropic.symbitest.hcl")
	if r.code != 0 || !strings.Contains(r.stdout, "(cassette cassettes/anthropic.json recorded)") {
		t.Fatalf("recording the example's cassette: %s", r)
	}
	got, err := os.ReadFile(filepath.Join(dir, "cassettes", "anthropic.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(got, []byte(anthropicTestKey)) {
		t.Fatal("the recorded cassette holds the key")
	}
	committed := filepath.Join("..", "examples", "cassettes", "anthropic.json")
	if updating() {
		if err := os.WriteFile(committed, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatalf("%v (go test ./e2e -run TestExampleCassettes -update records it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("examples/cassettes/anthropic.json is not what recording gives today (go test ./e2e -run TestExampleCassettes -update records it again):\n%s",
			cmp.Diff(string(want), string(got)))
	}
}

// TestExamplesTests is what CI runs: symbi test over every example's test
// file, offline, no key. Every example has one. The MCP examples need the
// npm filesystem server; without it (no `npm ci` in testdata/mcp) they are
// left out and the test says so.
func TestExamplesTests(t *testing.T) {
	dir := examplesCopy(t)
	configs, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
	for _, c := range configs {
		if lang.IsTestFile(c) || strings.HasSuffix(c, plan.LockFileSuffix) {
			continue
		}
		if _, err := os.Stat(strings.TrimSuffix(c, ".hcl") + lang.TestFileSuffix); err != nil {
			t.Errorf("example %s has no test file", filepath.Base(c))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "policies", "policies.symbitest.hcl")); err != nil {
		t.Error("examples/policies has no test file")
	}
	args := []string{"test", "-state-dir", filepath.Join(t.TempDir(), "state")}
	if _, err := os.Stat(filepath.Join(dir, "..", "testdata")); err != nil {
		t.Log("testdata/mcp/node_modules is not installed: the MCP examples' tests are left out")
		tests, _ := filepath.Glob(filepath.Join(dir, "*"+lang.TestFileSuffix))
		for _, tf := range tests {
			if !strings.Contains(filepath.Base(tf), "mcp") {
				args = append(args, "-filter", filepath.Base(tf))
			}
		}
		args = append(args, "-filter", "policies.symbitest.hcl")
	}
	r := symbi(t, call{dir: dir}, append(args, ".")...)
	if r.code != 0 || !strings.Contains(r.stdout, "Success!") {
		t.Fatalf("symbi test examples/: %s", r)
	}
	if regexp.MustCompile(`\.\.\. (fail|error|skip)`).MatchString(r.stdout) {
		t.Errorf("symbi test examples/: %s", r)
	}
}
