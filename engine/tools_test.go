package engine

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// toolAgentHCL is one agent with one builtin tool the rules policy allows;
// extra goes into the file as it is (a symbi block, a knowledge block).
func toolAgentHCL(tool, builtin, toolExtra, extra string) string {
	return fmt.Sprintf(`
%s
model "m" {
  provider = "scripted"
  script   = "unused.json"
}
tool %q {
  description = "the tool under test"
  builtin     = %q
  %s
}
policy "rules" {
  rules {
    allow = [%q]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.%s]
  policies = [policy.rules]
}
`, extra, tool, builtin, toolExtra, tool, tool)
}

// oneCall is a script: call tool with args, then answer "done".
func oneCall(tool, args string) string {
	return fmt.Sprintf(`{"turns":[{"tool_calls":[{"id":"c1","name":%q,"arguments":%s}]},{"content":"done"}]}`, tool, args)
}

// TestWorkspaceSetting has read_file read from the plan's workspace, a
// directory relative to the configuration's, and refuse a path that climbs
// out of it before the gate.
func TestWorkspaceSetting(t *testing.T) {
	p, dir := fixture{
		"main.hcl":    toolAgentHCL("read", "read_file", "", `symbi { workspace = "ws" }`),
		"unused.json": `{"turns":[]}`,
		"ws/note.txt": "inside the workspace",
		"outside.txt": "beside the workspace",
	}.compile(t)
	if p.Settings.Workspace == "" {
		t.Fatal("the plan has no workspace")
	}
	for _, tc := range []struct{ path, want string }{
		{"note.txt", "inside the workspace"},
		{"../outside.txt", `[invalid arguments] read: "../outside.txt": path outside the workspace`},
	} {
		m := scriptedModel(t, oneCall("read", fmt.Sprintf(`{"path":%q}`, tc.path)))
		e, _ := newEngine(t, p, dir, withModel(m))
		res := mustRun(t, e, "a", "read it", RunOptions{})
		if res.Termination.Reason != Completed {
			t.Fatalf("%s: %s", tc.path, res.Termination)
		}
		if got := lastToolMessages(m.Requests()[1])[0].Content; !strings.Contains(got, tc.want) {
			t.Errorf("read_file %s: %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestKnowledgeToolsUseThePlansStore gives an agent the knowledge tools
// without a knowledge block: with one store in the plan they use it, and
// a fact stored is recalled.
func TestKnowledgeToolsUseThePlansStore(t *testing.T) {
	hcl := `
knowledge "notes" {
  path = "notes.db"
}
model "m" {
  provider = "scripted"
  script   = "unused.json"
}
tool "store" {
  description = "store a fact"
  builtin     = "store_knowledge"
}
tool "recall" {
  description = "recall facts"
  builtin     = "recall_knowledge"
}
policy "rules" {
  rules {
    allow = ["store", "recall"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.store, tool.recall]
  policies = [policy.rules]
}
`
	p, dir := fixture{"main.hcl": hcl, "unused.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
	  {"tool_calls":[{"id":"c1","name":"store","arguments":{"subject":"symbi","predicate":"written_in","object":"Go","confidence":0.9}}]},
	  {"tool_calls":[{"id":"c2","name":"recall","arguments":{"query":"symbi"}}]},
	  {"content":"done"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "remember", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	stored := lastToolMessages(m.Requests()[1])[0].Content
	recalled := lastToolMessages(m.Requests()[2])[0].Content
	if strings.Contains(stored, "not configured") || !strings.Contains(recalled, "written_in Go") {
		t.Errorf("store: %q\nrecall: %q", stored, recalled)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.db")); err != nil {
		t.Errorf("the plan's store was not used: %v", err)
	}
}

// TestHTTPGetAllowHosts fetches from a local server whose host:port the
// tool's allow_hosts lists, and is refused a host it does not list.
func TestHTTPGetAllowHosts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from the allowed host")
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	p, dir := fixture{
		"main.hcl":    toolAgentHCL("fetch", "http_get", fmt.Sprintf("allow_hosts = [%q]", u.Host), ""),
		"unused.json": `{"turns":[]}`,
	}.compile(t)
	for _, tc := range []struct{ url, want string }{
		{srv.URL + "/page", "hello from the allowed host"},
		{"http://localhost:" + u.Port() + "/page", "[tool failed"},
	} {
		m := scriptedModel(t, oneCall("fetch", fmt.Sprintf(`{"url":%q}`, tc.url)))
		e, _ := newEngine(t, p, dir, withModel(m))
		res := mustRun(t, e, "a", "fetch it", RunOptions{})
		if res.Termination.Reason != Completed {
			t.Fatalf("%s: %s", tc.url, res.Termination)
		}
		if got := lastToolMessages(m.Requests()[1])[0].Content; !strings.Contains(got, tc.want) {
			t.Errorf("http_get %s: %q, want %q", tc.url, got, tc.want)
		}
	}
}
