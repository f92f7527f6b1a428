package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// breakerConfig is an agent whose model calls a tool that always fails,
// five times, then answers. The tool counts its runs in a file. breaker is
// the tool's circuit_breaker block, or "" for none.
func breakerConfig(breaker string) string {
	var turns []string
	for i := 1; i <= 5; i++ {
		turns = append(turns, fmt.Sprintf(`{"tool_calls": [{"id": "c%d", "name": "broken", "arguments": {}}]}`, i))
	}
	turns = append(turns, `{"content": "It keeps failing."}`)
	return `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "broken" {
  description = "Always fails"
  command {
    argv = ["sh", "-c", "echo run >> runs.txt; echo 'service down' >&2; exit 1"]
  }
  ` + breaker + `
}

policy "rules" {
  rules {
    allow = ["broken"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.broken]
  policies = [policy.rules]
  progress {
    max_reattempts_per_step = 0   # the breaker alone is under test
  }
}
-- script.json --
{"turns": [` + strings.Join(turns, ", ") + `]}
`
}

// writeConfig writes a main.hcl and the files after "-- NAME --" lines in
// src into a new directory.
func writeConfig(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	parts := strings.Split(src, "\n-- ")
	writeFile(t, dir, "main.hcl", parts[0])
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, " --\n")
		writeFile(t, dir, name, body)
	}
	return dir
}

func runsOf(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// TestEveryToolHasACircuitBreaker: a tool without a circuit_breaker block
// has the default breaker (3 failures, 60s, 1 probe), so of five failing
// calls three run and two are refused as circuit_open; the plan shows the
// breaker; circuit_breaker { enabled = false } lets all five run.
func TestEveryToolHasACircuitBreaker(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, breakerConfig(""))
	r := symbi(t, call{dir: dir}, "plan", ".")
	if r.code != 0 || !strings.Contains(r.stdout, "circuit_breaker {\n    failure_threshold = 3\n    half_open_max_calls = 1\n    recovery_timeout = \"1m0s\"\n  }") {
		t.Errorf("the plan does not show the default breaker:\n%s", r)
	}
	r = symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if n := runsOf(t, dir); n != 3 {
		t.Errorf("the failing tool ran %d times of 5; want 3, then the breaker refuses", n)
	}
	evs := readJournal(t, filepath.Join(dir, ".symbi"), onlyRun(t, filepath.Join(dir, ".symbi")))
	var kinds []string
	for _, tr := range eventsOf[journal.ToolResultData](t, evs, journal.ToolResult) {
		kinds = append(kinds, tr.ErrorKind)
	}
	if got := strings.Join(kinds, " "); got != "error error error circuit_open circuit_open" {
		t.Errorf("tool results %q, want three errors, then circuit_open twice", got)
	}

	off := writeConfig(t, breakerConfig("circuit_breaker {\n    enabled = false\n  }"))
	r = symbi(t, call{dir: off}, "plan", ".")
	if r.code != 0 || !strings.Contains(r.stdout, "circuit_breaker {\n    disabled = true\n  }") {
		t.Errorf("the plan does not show the breaker off:\n%s", r)
	}
	r = symbi(t, call{dir: off}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if n := runsOf(t, off); n != 5 {
		t.Errorf("with the breaker off the tool ran %d times of 5", n)
	}
}

// TestTruncatedOutputIsSaidToTheModel: a result cut at max_output_bytes
// is flagged in the journal with its size before the cut, and the model's
// observation (what the next request carries) ends with a note that says
// how much of it is shown.
func TestTruncatedOutputIsSaidToTheModel(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "read_file" {
  builtin          = "read_file"
  max_output_bytes = 1000
}

policy "rules" {
  rules {
    allow = ["read_file"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.read_file]
  policies = [policy.rules]
}
-- script.json --
{"turns": [{"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "big.txt"}}]}, {"content": "Read."}]}
`)
	writeFile(t, dir, "big.txt", strings.Repeat("0123456789", 500))
	r := symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	state := filepath.Join(dir, ".symbi")
	evs := readJournal(t, state, onlyRun(t, state))
	trs := eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)
	if len(trs) != 1 || !trs[0].Truncated || trs[0].OriginalBytes != 5000 || len(trs[0].Output) != 1000 {
		t.Fatalf("tool_result %+v, want 1000 bytes shown of 5000, truncated", trs)
	}
	const note = "[output truncated at max_output_bytes (1000): the first 1000 of 5000 bytes are shown]"
	for _, ev := range evs {
		if ev.Type == journal.ObservationsCollected && strings.Contains(string(ev.Data), note) {
			return
		}
	}
	t.Errorf("no observation tells the model the output was cut (%q)", note)
}

// TestArgumentsThatAreNotJSON: a model's tool-call arguments that are not
// JSON are refused before the gate with where they stop being JSON, not
// as "a string that is not an object"; the call never runs, and `policy
// eval --action` says the same of its text.
func TestArgumentsThatAreNotJSON(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "calculator" {
  builtin = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
-- script.json --
{"turns": [{"tool_calls": [{"id": "c1", "name": "calculator", "arguments": "{not json"}]}, {"content": "Sorry."}]}
`)
	r := symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	const want = "[invalid arguments] calculator: arguments are not valid JSON: invalid character 'n' looking for beginning of object key string, at offset 2 (line 1, column 2)"
	state := filepath.Join(dir, ".symbi")
	evs := readJournal(t, state, onlyRun(t, state))
	pe := eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated)
	if len(pe) == 0 || len(pe[0].Decisions) != 1 || pe[0].Decisions[0].Decision.Reason != want {
		t.Errorf("the gate's record %+v, want a refusal: %s", pe, want)
	}
	if n := len(eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)); n != 0 {
		t.Errorf("%d tool results: the call ran", n)
	}
	if !strings.Contains(r.stderr, "not valid JSON") || strings.Contains(r.stderr, "got string") {
		t.Errorf("stderr does not say the arguments are not JSON:\n%s", r.stderr)
	}

	r = symbi(t, call{dir: dir}, "policy", "eval", "policy.rules", "--action", "{not json", ".")
	if r.code != 2 || !strings.Contains(r.stderr, "not valid JSON: invalid character 'n' looking for beginning of object key string, at offset 2 (line 1, column 2)") {
		t.Errorf("policy eval --action '{not json':\n%s", r)
	}
}

// TestBestOfWithAgentIsAUsageError: --best-of names a block that runs its
// own agent, so --agent beside it was silently ignored; now the two
// together are refused (exit 2) before anything is compiled or run.
func TestBestOfWithAgentIsAUsageError(t *testing.T) {
	t.Parallel()
	examples, err := filepath.Abs(filepath.Join("..", "examples", "best_of_n.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{}, "run", "--best-of", "answer", "--agent", "solver", "--state-dir", state, examples, "Name a colour.")
	if r.code != 2 || !strings.Contains(r.stderr, "--agent and --best-of cannot be used together") {
		t.Errorf("--best-of with --agent:\n%s", r)
	}
	if _, err := os.Stat(state); err == nil {
		t.Errorf("a refused command wrote %s", state)
	}
}

// everythingServer is the path of the reference "everything" MCP server
// from npm, skipping the test when node or the server is not installed.
func everythingServer(t *testing.T) string {
	t.Helper()
	mcpServer(t) // node, /proc and the npm install
	p, err := filepath.Abs(filepath.Join("..", "testdata", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the npm everything server is not installed (%v): run `cd testdata/mcp && npm ci`", err)
	}
	return p
}

// everythingConfig is an agent over the everything server, whose command
// line carries marker (the test's directory) so that a test can find its
// own server processes. The agent's profile keeps echo, get-sum and
// simulate-research-query; a tool block wraps get-sum of a second server
// the agent does not list.
func everythingConfig(server, marker string) string {
	return fmt.Sprintf(`
model "m" {
  provider = "scripted"
  script   = "script.json"
}

mcp_server "everything" {
  command = ["node", %[1]q, "stdio", %[2]q]
  effect  = "read"
}

mcp_server "sums" {
  command = ["node", %[1]q, "stdio", %[2]q]
  effect  = "none"
}

tool "add" {
  description = "Add two numbers"
  mcp {
    server = mcp_server.sums
    tool   = "get-sum"
  }
}

tool_profile "some" {
  include = ["echo", "gzip-*", "simulate-*", "add"]
}

policy "rules" {
  rules {
    allow = ["echo", "add"]
  }
}

agent "a" {
  model        = model.m
  tools        = [tool.add, mcp_server.everything]
  tool_profile = tool_profile.some
  policies     = [policy.rules]
}
-- script.json --
{"turns": [{"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"message": "hi"}}, {"id": "c2", "name": "add", "arguments": {"a": 2, "b": 3}}]}, {"content": "Done."}]}
`, server, marker)
}

// TestToolsCommandListsMCPTools: `symbi tools` starts the servers, lists
// every tool with its source, the effect the gate sees (the block's
// "read" raised by gzip-file-as-resource's annotations to "write"), the
// agents and the arguments (the wrapped get-sum's "none" raised to "read"
// by its readOnlyHint); lists simulate-research-query (which
// requires MCP tasks) as not offered, with why; prints the schemas with
// --json; and leaves no server running.
func TestToolsCommandListsMCPTools(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	marker := t.TempDir()
	dir := writeConfig(t, everythingConfig(server, marker))

	r := symbi(t, call{dir: dir}, "tools", "--json", ".")
	if r.code != 0 {
		t.Fatalf("tools --json:\n%s", r)
	}
	var c struct {
		Tools []struct {
			Name, Effect, Source, Kind, Signature, Server, ServerTool string
			ServerToolJSON                                            string `json:"server_tool"`
			Parameters                                                json.RawMessage
			Agents, RemovedBy                                         []string
			RemovedByJSON                                             []string `json:"removed_by"`
		}
		Withheld []struct{ Name, Source, Reason string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatalf("tools --json is not JSON: %v\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for _, tool := range c.Tools {
		got[tool.Source+" "+tool.Name] = fmt.Sprintf("%s %s %v %v %s", tool.Effect, tool.Kind, tool.Agents, tool.RemovedByJSON, tool.Signature)
		if !json.Valid(tool.Parameters) || len(tool.Parameters) == 0 {
			t.Errorf("%s: parameters %s", tool.Name, tool.Parameters)
		}
	}
	for key, want := range map[string]string{
		"tool.add add":                                "read mcp [agent.a] [] {a: number, b: number}",
		"mcp_server.everything echo":                  "read mcp [agent.a] [] {message: string}",
		"mcp_server.everything gzip-file-as-resource": "write mcp [agent.a] [] {data?: string, name?: string, outputType?: \"resourceLink\" | \"resource\"}",
		"mcp_server.everything get-env":               "read mcp [] [agent.a] {}",
		"mcp_server.sums get-sum":                     "read mcp [] [] {a: number, b: number}",
	} {
		if got[key] != want {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
	if len(c.Withheld) == 0 || c.Withheld[0].Name != "simulate-research-query" || !strings.Contains(c.Withheld[0].Reason, "requires MCP task augmentation") {
		t.Errorf("withheld %+v, want simulate-research-query with why", c.Withheld)
	}
	for k := range got {
		if strings.HasSuffix(k, " simulate-research-query") {
			t.Errorf("a tool that requires tasks is listed as offered: %s", k)
		}
	}
	assertNoProcess(t, marker)

	r = symbi(t, call{dir: dir}, "tools", ".")
	for _, want := range []string{
		"echo  mcp_server.everything  effect read  agents: a\n  Echoes back the input string\n  arguments: {message: string}\n",
		"add  mcp_server.sums: get-sum  effect read  agents: a\n",
		"get-env  mcp_server.everything  effect read  no agent (removed by the tool_profile of a)\n",
		"Not offered to any model:\n  simulate-research-query (mcp_server.everything): requires MCP task augmentation",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("symbi tools lacks %q:\n%s", want, r)
		}
	}
	r = symbi(t, call{dir: dir}, "tools", "--agent", "a", ".")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agent.a: 3 tools\n\nadd  mcp_server.sums: get-sum  effect read\n") || !strings.Contains(r.stdout, "removed by the tool_profile: get-annotated-message") {
		t.Errorf("symbi tools --agent a:\n%s", r)
	}
	assertNoProcess(t, marker)
}

// TestRunWithholdsTaskTools: a run over the everything server does not
// offer simulate-research-query, records why in its started line and
// says so on stderr; the wrapped get-sum of a server the agent does not
// list runs (the agent's toolbox starts that server for the block alone).
func TestRunWithholdsTaskTools(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	marker := t.TempDir()
	dir := writeConfig(t, everythingConfig(server, marker))
	r := symbi(t, call{dir: dir}, "run", ".", "go")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if !strings.Contains(r.stderr, "⚠ simulate-research-query of mcp_server.everything is not offered: requires MCP task augmentation") {
		t.Errorf("stderr does not say the task tool is not offered:\n%s", r.stderr)
	}
	state := filepath.Join(dir, ".symbi")
	evs := readJournal(t, state, onlyRun(t, state))
	started := eventsOf[journal.StartedData](t, evs, journal.Started)
	if len(started) == 0 || len(started[0].WithheldTools) != 1 || started[0].WithheldTools[0].Tool != "simulate-research-query" {
		t.Errorf("started %+v, want simulate-research-query withheld", started)
	}
	outputs := map[string]string{}
	for _, tr := range eventsOf[journal.ToolResultData](t, evs, journal.ToolResult) {
		outputs[tr.Tool] = tr.Output + tr.Error
	}
	if !strings.Contains(outputs["echo"], "hi") || !strings.Contains(outputs["add"], "5") {
		t.Errorf("tool results %v, want echo's hi and add's 5", outputs)
	}
	assertNoProcess(t, marker)
}

// TestToolsTimeout: a server that never answers fails `symbi tools` with
// exit 4 once --timeout passes, naming the server, and is stopped.
func TestToolsTimeout(t *testing.T) {
	t.Parallel()
	marker := t.TempDir()
	dir := writeConfig(t, fmt.Sprintf(`
mcp_server "mute" {
  command = ["sh", "-c", "sleep 120", %q]
  timeout = "2m"
}
`, marker))
	r := symbi(t, call{dir: dir, timeout: time.Minute}, "tools", "--timeout", "1s", ".")
	if r.code != 4 || !strings.Contains(r.stderr, "mcp_server.mute") || !strings.Contains(r.stderr, "did not start and list their tools in time") {
		t.Errorf("tools with a mute server:\n%s", r)
	}
	assertNoProcess(t, marker)
	r = symbi(t, call{dir: dir}, "tools", "--timeout", "0s", ".")
	if r.code != 2 {
		t.Errorf("--timeout 0s:\n%s", r)
	}
}

// TestReplToolsAndCallMCP: the REPL's :tools lists an agent's server
// tools and :call calls one (gated by the agent's policies) through the
// real binary; the servers stop with the session.
func TestReplToolsAndCallMCP(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	marker := t.TempDir()
	dir := writeConfig(t, everythingConfig(server, marker))
	r := symbi(t, call{dir: dir, stdin: ":tools a\n:call echo {message = \"from the repl\"}\n:call gzip-file-as-resource {}\n:call simulate-research-query {topic = \"x\"}\n"}, "repl", ".")
	for _, want := range []string{
		"  echo                   mcp_server.everything     effect read   approval policy  Echoes back the input string",
		"not offered: simulate-research-query (mcp_server.everything): requires MCP task augmentation",
		"agent.a: allow by policy.rules (rules): tool_call \"echo\" matches allow rule \"echo\"\nEcho: from the repl\n",
		"agent.a: deny by chain: no policy of agent.a addresses tool_call \"gzip-file-as-resource\"",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("repl output lacks %q:\n%s", want, r)
		}
	}
	if !strings.Contains(r.stderr, "Tool not offered") {
		t.Errorf("repl: :call of a task tool is not refused as not offered:\n%s", r)
	}
	assertNoProcess(t, marker)
}

// TestTwoAsksArePendingAtOnce: a model turn that proposes two calls a
// policy asks a person about puts both in the approval queue at once
// (`symbi approve` lists both before either is decided), and each is
// decided on its own: the second approved first, the first denied after;
// only the approved call runs.
func TestTwoAsksArePendingAtOnce(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "touch_a" {
  description = "Write marker a"
  command {
    argv = ["sh", "-c", "echo a > a.txt; echo wrote a"]
  }
}

tool "touch_b" {
  description = "Write marker b"
  command {
    argv = ["sh", "-c", "echo b > b.txt; echo wrote b"]
  }
}

policy "rules" {
  rules {
    ask = ["touch_*"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.touch_a, tool.touch_b]
  policies = [policy.rules]
}
-- script.json --
{"turns": [{"tool_calls": [{"id": "ca", "name": "touch_a", "arguments": {}}, {"id": "cb", "name": "touch_b", "arguments": {}}]}, {"content": "Done."}]}
`)
	state := filepath.Join(t.TempDir(), "state")
	p := start(t, call{dir: dir}, "run", "--state-dir", state, ".", "go")
	var ids map[string]string // tool -> request id
	deadline := time.Now().Add(hangLimit)
	for ids == nil || len(ids) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two requests were never pending at once (last seen: %v)", ids)
		}
		time.Sleep(50 * time.Millisecond)
		r := symbi(t, call{}, "approve", "--state-dir", state)
		if r.code != 0 {
			continue // no queue yet
		}
		ids = map[string]string{}
		for _, line := range strings.Split(r.stdout, "\n") {
			for _, tool := range []string{"touch_a", "touch_b"} {
				if id, _, ok := strings.Cut(line, "  agent a wants tool_call \""+tool+"\""); ok {
					ids[tool] = id
				}
			}
		}
		if len(ids) == 1 {
			// Listed one alone: the other must come without a decision.
			continue
		}
	}
	if r := symbi(t, call{}, "approve", "--state-dir", state, "--by", "e2e", ids["touch_b"]); r.code != 0 {
		t.Fatalf("approve touch_b:\n%s", r)
	}
	// The run takes touch_b's answer while touch_a's request still waits.
	for decidedB := false; !decidedB; {
		if time.Now().After(deadline) {
			t.Fatal("the run never took the answer to touch_b while touch_a waited")
		}
		time.Sleep(50 * time.Millisecond)
		runs, _ := journal.ListRuns(state)
		if len(runs) != 1 {
			continue
		}
		evs, _ := journal.ReadFile(journal.Path(state, runs[0].ID))
		for _, ev := range evs {
			decidedB = decidedB || ev.Type == journal.ApprovalDecided && strings.Contains(string(ev.Data), `"tool":"touch_b"`)
		}
	}
	if r := symbi(t, call{}, "approve", "--state-dir", state); !strings.Contains(r.stdout, ids["touch_a"]) || strings.Contains(r.stdout, ids["touch_b"]) {
		t.Errorf("after touch_b's answer, the queue should list touch_a alone:\n%s", r)
	}
	if r := symbi(t, call{}, "deny", "--state-dir", state, "--by", "e2e", "--reason", "not a", ids["touch_a"]); r.code != 0 {
		t.Fatalf("deny touch_a:\n%s", r)
	}
	r := p.wait(t)
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err == nil {
		t.Error("the denied call ran")
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err != nil {
		t.Error("the approved call did not run")
	}
	evs := readJournal(t, state, onlyRun(t, state))
	var order []string
	for _, ev := range evs {
		switch ev.Type {
		case journal.ApprovalRequested:
			order = append(order, "requested "+decodeEvent[journal.ApprovalRequestedData](t, ev).Tool)
		case journal.ApprovalDecided:
			d := decodeEvent[journal.ApprovalDecidedData](t, ev)
			order = append(order, fmt.Sprintf("decided %s %v", d.Tool, d.Approved))
		}
	}
	if got := strings.Join(order, ", "); got != "requested touch_a, requested touch_b, decided touch_b true, decided touch_a false" {
		t.Errorf("approvals in the journal: %s", got)
	}
	assertGated(t, evs)
}

// TestLifecycleEventsInJSON: `symbi run --json` streams, besides the
// journal's events, a model_first_event per model call and the
// tool_call_delta pieces of a tool call as the model writes it (index,
// tool, piece of the arguments), which put together are the call; neither
// is journalled, and reasoning_complete records the time to the first
// event.
func TestLifecycleEventsInJSON(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithLatency(20*time.Millisecond), fakeserver.WithReplies(
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", ArgumentChunks: []string{`{"expr`, `ession":`, `"6*7"}`}}}},
		fakeserver.Text("42"),
	))
	dir := writeConfig(t, fmt.Sprintf(`
model "m" {
  provider = "openai"
  name     = "e2e-model"
  base_url = %q
  timeouts {
    total       = "15s"
    first_event = "5s"
    idle        = "5s"
  }
}

tool "calculator" {
  builtin = "calculator"
}

policy "rules" {
  rules {
    allow = ["calculator"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
`, srv.URL()))
	state := filepath.Join(dir, ".symbi")
	r := symbi(t, call{dir: dir, env: []string{"OPENAI_API_KEY=k"}}, "run", "--json", ".", "6*7?")
	if r.code != 0 {
		t.Fatalf("run --json:\n%s", r)
	}
	var firsts int
	var name, args string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Type  string          `json:"event"`
			Data  json.RawMessage `json:"data"`
			Delta string          `json:"delta"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("a line that is not JSON: %q", line)
		}
		switch ev.Type {
		case journal.ModelFirstEvent:
			var d journal.FirstEventData
			if json.Unmarshal(ev.Data, &d) != nil || d.Model != "model.m" {
				t.Errorf("model_first_event %s", ev.Data)
			}
			firsts++
		case journal.ToolCallDelta:
			var d journal.ToolCallDeltaData
			if json.Unmarshal(ev.Data, &d) != nil || d.Index != 0 {
				t.Errorf("tool_call_delta %s", ev.Data)
			}
			if d.Name != "" {
				name = d.Name
			}
			args += ev.Delta
		}
	}
	if firsts != 2 || name != "calculator" || args != `{"expression":"6*7"}` {
		t.Errorf("%d first events; the streamed call %s %s", firsts, name, args)
	}
	evs := readJournal(t, state, onlyRun(t, state))
	for _, typ := range eventTypes(evs) {
		if typ == journal.ModelFirstEvent || typ == journal.ToolCallDelta {
			t.Errorf("%s was journalled", typ)
		}
	}
	for _, rc := range eventsOf[journal.ReasoningCompleteData](t, evs, journal.ReasoningComplete) {
		if rc.FirstEventMS <= 0 {
			t.Errorf("reasoning_complete without first_event_ms: %+v", rc)
		}
	}
}
