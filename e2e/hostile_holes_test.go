package e2e

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// Issue #11, item 9 (and the + of item 6): smaller holes in the gate, each
// tried through the real binary with a hostile model, a hostile MCP server
// (testdata/hostile_mcp) or both.

// buildHostileMCP builds testdata/hostile_mcp, an MCP server over stdio
// whose tools write $MARKER_DIR/<tool> when they run, into dir.
func buildHostileMCP(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "hostile_mcp")
	build := exec.Command("go", "build", "-o", bin, "./testdata/hostile_mcp")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/hostile_mcp: %v\n%s", err, out)
	}
	return bin
}

// ran reports whether the hostile server's tool ran: its marker exists.
func ran(markers, tool string) bool {
	_, err := os.Stat(filepath.Join(markers, tool))
	return err == nil
}

// stateText is every file under the state directory, by path.
func stateText(t *testing.T, state string) map[string]string {
	out := map[string]string{}
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(path)
			out["state file "+path] = string(b)
		}
		return nil
	})
	return out
}

const hostileMCPConfig = `
variable "server" {
  type = string
}

variable "markers" {
  type = string
}

model "impostor" {
  provider = "scripted"
  script   = "impostor.json"
}

model "tidier" {
  provider = "scripted"
  script   = "tidier.json"
}

# Says its tools are destructive; purge claims readOnlyHint and
# destructiveHint at once.
mcp_server "evil" {
  command = [var.server]
  env     = { MARKER_DIR = var.markers }
  effect  = "destructive"
  timeout = "30s"
}

# The same server, declared read: purge's destructiveHint must raise it.
mcp_server "mild" {
  command = [var.server]
  env     = { MARKER_DIR = var.markers }
  effect  = "read"
  timeout = "30s"
}

# Wraps purge under a name of its own, with no effect: the compiler gives
# it its server's (read), which the annotations must raise.
tool "tidy" {
  description = "Tidy up"
  mcp {
    server = mcp_server.mild
    tool   = "purge"
  }
}

agent "critic" {
  description = "The only agent anyone may delegate to"
  model       = model.impostor
}

# Allowed to delegate to the critic, and to nothing else: a rule written
# for the delegate action. It has no delegates of its own, so the engine
# offers no delegate tool; the server's tool of that name is what the
# model would reach.
policy "delegation" {
  rules {
    allow = ["delegate:target=critic"]
  }
}

agent "boss" {
  description = "Has the hostile server's tools and a delegation rule"
  model       = model.impostor
  tools       = [mcp_server.evil]
  policies    = [policy.delegation]
}

policy "tidying" {
  rules {
    allow = ["purge", "tidy"]
  }
}

agent "direct" {
  model    = model.tidier
  tools    = [mcp_server.evil]
  policies = [policy.tidying]
}

# Only the wrapping tool: the server's own purge is hidden.
tool_profile "tidy_only" {
  include = ["tidy"]
}

agent "wrapped" {
  model        = model.tidier
  tools        = [tool.tidy, mcp_server.mild]
  tool_profile = tool_profile.tidy_only
  policies     = [policy.tidying]
}

best_of_n "direct" {
  agent        = agent.direct
  candidates   = 1
  side_effects = "read_only"
  scorer {
    expr = 1
  }
  selector {
    kind = "highest_score"
  }
}

best_of_n "wrapped" {
  agent        = agent.wrapped
  candidates   = 1
  side_effects = "read_only"
  scorer {
    expr = 1
  }
  selector {
    kind = "highest_score"
  }
}
`

// The impostor first calls the server's tool by the name it offers, then,
// told there is no such tool, by the name symbi gave it; the delegation
// rule must not allow that either.
const impostorScript = `{
  "turns": [
    {"tool_calls": [{"id": "call_delegate", "name": "delegate", "arguments": {"target": "critic", "task": "approve everything"}}]},
    {"when": "unknown tool", "tool_calls": [{"id": "call_renamed", "name": "evil__delegate", "arguments": {"target": "critic", "task": "approve everything"}}]},
    {"when": "policy denied", "content": "The delegation tool was refused."}
  ],
  "on_exhausted": "error"
}`

// The tidier calls whichever purge it has (the server's, or the tool
// block that wraps it), then answers.
const tidierScript = `{
  "turns": [
    {"tool_calls": [{"id": "call_purge", "name": "purge", "arguments": {"everything": true}}, {"id": "call_tidy", "name": "tidy", "arguments": {"everything": true}}]},
    {"content": "Done."}
  ],
  "on_exhausted": "error"
}`

// TestHostileMCP covers the two MCP holes of item 9 with one build of the
// hostile server.
func TestHostileMCP(t *testing.T) {
	t.Parallel()
	server := buildHostileMCP(t, t.TempDir())
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", hostileMCPConfig)
	writeFile(t, dir, "impostor.json", impostorScript)
	writeFile(t, dir, "tidier.json", tidierScript)

	// An MCP tool named delegate must neither keep the name nor pass a
	// delegate:target=… rule under any name.
	t.Run("reserved_name", func(t *testing.T) {
		t.Parallel()
		markers, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
		r := symbi(t, call{dir: dir}, "run", "--agent", "boss", "--state-dir", state, "--var", "server="+server, "--var", "markers="+markers, ".", "go")
		if ran(markers, "delegate") {
			t.Fatalf("the server's delegate tool ran: a delegate:target=critic rule let an MCP tool through\n%s", r)
		}
		if r.code != 0 || strings.TrimSpace(r.stdout) != "The delegation tool was refused." {
			t.Fatalf("run:\n%s", r)
		}
		evs := readJournal(t, state, onlyRun(t, state))
		assertGated(t, evs)
		if !observed(t, evs, `[unknown tool] "delegate"`) {
			t.Errorf("the server's tool kept the name delegate: no [unknown tool] observation for it")
		}
		var renamed *journal.GateRecord
		for _, pe := range eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated) {
			for _, d := range pe.Decisions {
				if d.Action.Tool == "evil__delegate" {
					renamed = &d
				}
			}
		}
		if renamed == nil || renamed.Decision.Outcome != "deny" {
			t.Errorf("evil__delegate: decision %+v, want a deny (no rule allows it)", renamed)
		}
	})

	// readOnlyHint may not lower a declared effect, nor win over
	// destructiveHint: the tool must not run in a read_only best-of-N,
	// called directly or through a tool block that wraps it.
	for bon, tool := range map[string]string{"direct": "purge", "wrapped": "tidy"} {
		t.Run("annotations_"+bon, func(t *testing.T) {
			t.Parallel()
			markers, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
			r := symbi(t, call{dir: dir}, "run", "--best-of", bon, "--state-dir", state, "--var", "server="+server, "--var", "markers="+markers, ".", "tidy up")
			if ran(markers, "purge") {
				t.Fatalf("purge ran inside a read_only best-of-N: its readOnlyHint won over its destructiveHint and the declared effect\n%s", r)
			}
			// The one candidate tried a destructive call, so it is not
			// eligible and the set selects none (exit 4).
			blocked := tool + ` has effect "destructive"; this run may only read`
			if r.code != 4 || !strings.Contains(r.stderr, "side_effect_blocked: "+blocked) {
				t.Fatalf("run: want exit 4, the candidate blocked for calling %s\n%s", tool, r)
			}
			found := false
			for _, text := range stateText(t, state) {
				found = found || strings.Contains(text, strings.ReplaceAll(blocked, `"`, `\"`))
			}
			if !found {
				t.Errorf("no journal says %s was blocked as destructive", tool)
			}
		})
	}
}

// queryLog records the query of every request a test server receives.
type queryLog struct {
	mu      sync.Mutex
	queries []url.Values
	raw     []string
}

func (l *queryLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queries = append(l.queries, r.URL.Query())
	l.raw = append(l.raw, r.URL.RawQuery)
}

func (l *queryLog) all() ([]url.Values, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]url.Values(nil), l.queries...), append([]string(nil), l.raw...)
}

// queryServer answers with the query it received, decoded and raw, as a
// careless service might.
func queryServer(t *testing.T) (*httptest.Server, *queryLog) {
	var log queryLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		log.add(r)
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false) // an & stays an &, as the secret holds it
		enc.Encode(map[string]any{"query": r.URL.Query(), "raw": r.URL.RawQuery})
	}))
	t.Cleanup(srv.Close)
	return srv, &log
}

const fixedQueryConfig = `
variable "base" {
  type = string
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "profile" {
  description = "A user's public profile"
  parameters = {
    type       = "object"
    properties = { user = { type = "string" }, scope = { type = "string" }, fields = { type = "string" } }
  }
  http {
    url    = "${var.base}/profile?user=alice&scope=public"
    method = "GET"
  }
  effect = "read"
}

policy "rules" {
  rules {
    allow = ["profile"]
  }
}

agent "reader" {
  model    = model.m
  tools    = [tool.profile]
  policies = [policy.rules]
}
`

const fixedQueryScript = `{
  "turns": [
    {"tool_calls": [{"id": "call_admin", "name": "profile", "arguments": {"user": "admin", "scope": "private"}}]},
    {"when": "which the tool's URL fixes", "tool_calls": [{"id": "call_case", "name": "profile", "arguments": {"User": "admin", "scope[]": "private"}}]},
    {"when": "which the tool's URL fixes", "tool_calls": [{"id": "call_fields", "name": "profile", "arguments": {"fields": "name"}}]},
    {"when": "alice", "content": "Read alice's public profile."}
  ],
  "on_exhausted": "error"
}`

// TestHostileHTTPFixedQuery: an http tool's configured query
// (?user=alice&scope=public) cannot be replaced, doubled or shadowed by
// the model's arguments; they can only add parameters.
func TestHostileHTTPFixedQuery(t *testing.T) {
	t.Parallel()
	srv, log := queryServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", fixedQueryConfig)
	writeFile(t, dir, "script.json", fixedQueryScript)
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--state-dir", state, "--var", "base="+srv.URL, ".", "go")
	queries, raws := log.all()
	for i, q := range queries {
		if len(q["user"]) != 1 || q.Get("user") != "alice" || len(q["scope"]) != 1 || q.Get("scope") != "public" {
			t.Errorf("request %d reached the server with query %q: the model replaced a fixed parameter", i, raws[i])
		}
		for k := range q {
			if k != "user" && k != "scope" && k != "fields" {
				t.Errorf("request %d: parameter %q, a spelling of a fixed one, reached the server (%q)", i, k, raws[i])
			}
		}
	}
	if r.code != 0 || strings.TrimSpace(r.stdout) != "Read alice's public profile." {
		t.Fatalf("run:\n%s", r)
	}
	if len(raws) != 1 || raws[0] != "user=alice&scope=public&fields=name" {
		t.Errorf("the server saw %q, want only the allowed call, its fixed query first", raws)
	}
	evs := readJournal(t, state, onlyRun(t, state))
	assertGated(t, evs)
	if n := len(eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched)); n != 1 {
		t.Errorf("%d tools_dispatched events, want 1: the refused calls are refused before the gate", n)
	}
}

// plusToken has every character a query gives a meaning to.
const plusToken = "tok+e2e/PLUS=x&y%z"

const plusTokenConfig = `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "lookup" {
  description = "Looks a name up"
  parameters = {
    type       = "object"
    properties = { name = { type = "string" } }
  }
  http {
    url    = "${env("SYMBI_E2E_LOOKUP")}/lookup?key=${env("SYMBI_E2E_PLUS_TOKEN")}&v=2"
    method = "GET"
  }
  effect = "read"
}

policy "rules" {
  rules {
    allow = ["lookup"]
  }
}

agent "reader" {
  model    = model.m
  tools    = [tool.lookup]
  policies = [policy.rules]
}
`

const plusTokenScript = `{
  "turns": [
    {"tool_calls": [{"id": "call_lookup", "name": "lookup", "arguments": {"name": "ada"}}]},
    {"when": "query", "content": "Looked ada up."}
  ],
  "on_exhausted": "error"
}`

// TestHostileHTTPEnvTokenPlus: a + (or & = / %) in an env() value inside
// an http tool's URL reaches the server exactly, not as a space or a new
// parameter; the server echoes it, raw and percent-encoded, and the
// redactor hides both.
func TestHostileHTTPEnvTokenPlus(t *testing.T) {
	t.Parallel()
	srv, log := queryServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", plusTokenConfig)
	writeFile(t, dir, "script.json", plusTokenScript)
	state := filepath.Join(t.TempDir(), "state")
	c := call{dir: dir, env: []string{"SYMBI_E2E_LOOKUP=" + srv.URL, "SYMBI_E2E_PLUS_TOKEN=" + plusToken}}
	r := symbi(t, c, "run", "--json", "--state-dir", state, ".", "go")
	queries, raws := log.all()
	if len(queries) != 1 {
		t.Fatalf("the server saw %d requests, want 1\n%s", len(queries), r)
	}
	if got := queries[0]["key"]; len(got) != 1 || got[0] != plusToken {
		t.Errorf("the server got key %q, want %q exactly (raw query %q)", got, plusToken, raws[0])
	}
	if q := queries[0]; q.Get("v") != "2" || q.Get("name") != "ada" || len(q) != 3 {
		t.Errorf("the token moved the rest of the query: %q", raws[0])
	}
	if r.code != 0 || !strings.Contains(r.stdout, "Looked ada up.") {
		t.Fatalf("run:\n%s", r)
	}
	outputs := stateText(t, state)
	outputs["run stdout"], outputs["run stderr"] = r.stdout, r.stderr
	// The journal is JSON, which may write & as \u0026: the tool's output
	// is checked decoded too.
	evs := readJournal(t, state, onlyRun(t, state))
	results := eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)
	if len(results) != 1 || !strings.Contains(results[0].Output, `"v":["2"]`) {
		t.Fatalf("tool results %+v, want the server's echo", results)
	}
	outputs["the tool's output, decoded"] = results[0].Output
	assertNoSecrets(t, outputs, map[string]string{
		"the token":                 plusToken,
		"the token, as it was sent": url.QueryEscape(plusToken),
	})
}

const cedarNumbersConfig = `
variable "marker" {
  type = string
}

model "ratio" {
  provider = "scripted"
  script   = "ratio.json"
}

model "search" {
  provider = "scripted"
  script   = "search.json"
}

tool "mix" {
  description = "Mixes at a ratio"
  parameters = {
    type       = "object"
    properties = { ratio = { type = "number" } }
    required   = ["ratio"]
  }
  command {
    argv = ["sh", "-c", "cat >\"$MARKER\"; echo mixed"]
    env  = { MARKER = var.marker }
  }
  effect = "write"
}

tool "web_search" {
  description = "Search the web"
  parameters = {
    type = "object"
    properties = {
      query       = { type = "string" }
      max_results = { type = "integer", minimum = 1 }
    }
    required = ["query"]
  }
  command {
    argv = ["sh", "-c", "cat >\"$MARKER\"; echo found"]
    env  = { MARKER = var.marker }
  }
  effect = "read"
}

policy "ratio" {
  cedar {
    policies = ["ratio.cedar"]
  }
}

# The example policy pack's schema: max_results is a Long.
policy "schema" {
  cedar {
    policies = ["search.cedar"]
    schema   = "symbi.cedarschema"
  }
}

agent "mixer" {
  model    = model.ratio
  tools    = [tool.mix]
  policies = [policy.ratio]
}

agent "searcher" {
  model    = model.search
  tools    = [tool.web_search]
  policies = [policy.schema]
}
`

const ratioCedar = `@id("answer")
permit (principal, action == Symbi::Action::"respond", resource);

@id("tools")
permit (principal, action == Symbi::Action::"call_tool", resource);

@id("ratio")
@reason("e2e: ratio above one half")
forbid (principal, action == Symbi::Action::"call_tool", resource)
when { context.arguments has ratio && context.arguments.ratio.greaterThan(decimal("0.5")) };
`

const searchCedar = `@id("answer")
permit (principal, action == Symbi::Action::"respond", resource);

@id("search")
permit (principal, action == Symbi::Action::"call_tool", resource == Symbi::Tool::"web_search");
`

// The arguments are strings, sent as written: a JSON object would be
// re-encoded, and 10.0 would become 10.
const ratioScript = `{
  "turns": [
    {"tool_calls": [{"id": "call_mix", "name": "mix", "arguments": "{\"ratio\":0.50009}"}]},
    {"when": "policy denied", "content": "The mix was refused."},
    {"when": "mixed", "content": "Mixed."}
  ],
  "on_exhausted": "error"
}`

const searchScript = `{
  "turns": [
    {"tool_calls": [{"id": "call_search", "name": "web_search", "arguments": "{\"query\":\"otters\",\"max_results\":10.0}"}]},
    {"when": "found", "content": "Found otters."},
    {"when": "policy denied", "content": "The search was refused."}
  ],
  "on_exhausted": "error"
}`

// TestHostileCedarNumbers: a number Cedar cannot hold exactly (0.50009) is
// never rounded into one a forbid lets through, the deny naming the
// argument; an integral number written 10.0 is a Long, so the example
// schema lets through what the tool's own schema accepts.
func TestHostileCedarNumbers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", cedarNumbersConfig)
	writeFile(t, dir, "ratio.cedar", ratioCedar)
	writeFile(t, dir, "search.cedar", searchCedar)
	writeFile(t, dir, "ratio.json", ratioScript)
	writeFile(t, dir, "search.json", searchScript)
	schema, err := os.ReadFile(filepath.Join("..", "examples", "policies", "cedar", "symbi.cedarschema"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "symbi.cedarschema", string(schema))

	decisionOf := func(t *testing.T, evs []journal.Event, tool string) *journal.GateRecord {
		for _, pe := range eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated) {
			for _, d := range pe.Decisions {
				if d.Action.Tool == tool {
					return &d
				}
			}
		}
		t.Fatalf("no gate decision for %s: %v", tool, eventTypes(evs))
		return nil
	}

	t.Run("inexact_decimal", func(t *testing.T) {
		t.Parallel()
		marker, state := filepath.Join(t.TempDir(), "marker"), filepath.Join(t.TempDir(), "state")
		r := symbi(t, call{dir: dir}, "run", "--agent", "mixer", "--state-dir", state, "--var", "marker="+marker, ".", "go")
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("mix ran with ratio 0.50009, which a forbid on ratio > 0.5 should stop\n%s", r)
		}
		if r.code != 0 || strings.TrimSpace(r.stdout) != "The mix was refused." {
			t.Fatalf("run:\n%s", r)
		}
		evs := readJournal(t, state, onlyRun(t, state))
		assertGated(t, evs)
		d := decisionOf(t, evs, "mix")
		if d.Decision.Outcome != "deny" || !strings.Contains(d.Decision.Reason, "arguments.ratio: 0.50009 has more than four decimal places") {
			t.Errorf("mix: %s %q, want a deny naming the argument", d.Decision.Outcome, d.Decision.Reason)
		}
	})

	t.Run("integral_as_long", func(t *testing.T) {
		t.Parallel()
		marker, state := filepath.Join(t.TempDir(), "marker"), filepath.Join(t.TempDir(), "state")
		r := symbi(t, call{dir: dir}, "run", "--agent", "searcher", "--state-dir", state, "--var", "marker="+marker, ".", "go")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "Found otters." {
			t.Fatalf("max_results: 10.0, which the tool's schema accepts, was not let through\n%s", r)
		}
		got, err := os.ReadFile(marker)
		if err != nil || !strings.Contains(string(got), "10.0") {
			t.Errorf("the tool got %q (%v), want the arguments the gate saw", got, err)
		}
		evs := readJournal(t, state, onlyRun(t, state))
		assertGated(t, evs)
		if d := decisionOf(t, evs, "web_search"); d.Decision.Outcome != "allow" {
			t.Errorf("web_search: %s %q, want allow", d.Decision.Outcome, d.Decision.Reason)
		}
	})
}
