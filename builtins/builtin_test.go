package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/plan"
)

func allBuiltins() []plan.Tool {
	var tools []plan.Tool
	for _, n := range BuiltinNames() {
		tools = append(tools, builtinTool(n))
	}
	return tools
}

func TestBuiltinInfo(t *testing.T) {
	want := map[string]string{
		"calculator": "none", "clock": "none", "read_file": "read", "list_dir": "read", "write_file": "write",
		"http_get": "read", "delegate": "none", "recall_knowledge": "read", "store_knowledge": "write",
	}
	if len(BuiltinNames()) != len(want) {
		t.Errorf("builtins %v", BuiltinNames())
	}
	for name, effect := range want {
		info, ok := BuiltinInfo(name)
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if info.Effect != effect || info.Description == "" || info.Source != "builtin" {
			t.Errorf("%s: %+v", name, info)
		}
		if err := CompileSchema(info.Parameters); err != nil {
			t.Errorf("%s: own schema: %v", name, err)
		}
	}
	if _, ok := BuiltinInfo("shell"); ok {
		t.Error("shell is not a builtin")
	}
	// A configured builtin tool gets the builtin's schema and effect.
	tb := newToolbox(t, allBuiltins(), nil, Options{})
	info, _ := tb.Info("write_file")
	if info.Effect != "write" || !strings.Contains(string(info.Parameters), `"content"`) || info.Source != "tool.write_file" {
		t.Errorf("configured builtin %+v", info)
	}
}

func TestUnknownBuiltinIsAnError(t *testing.T) {
	_, err := NewToolbox(context.Background(), []plan.Tool{builtinTool("shell")}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), `unknown builtin "shell"`) {
		t.Errorf("error %v", err)
	}
}

func TestCalculatorAndClock(t *testing.T) {
	clock := newFakeClock()
	tb := newToolbox(t, allBuiltins(), nil, Options{Now: clock.Now})
	ctx := context.Background()
	r, err := tb.Call(ctx, approve(t, tb, "calculator", `{"expression":"6 * 7"}`))
	if err != nil || r.Content != "42" {
		t.Errorf("calculator: %q %v", r.Content, err)
	}
	_, err = tb.Call(ctx, approve(t, tb, "calculator", `{"expression":"6 / (3 - 3)"}`))
	if f := wantKind(t, err, InvalidArguments); !strings.Contains(f.Error(), "division by zero") {
		t.Errorf("error %v", err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "clock", `{"timezone":"Asia/Tokyo"}`))
	if err != nil || r.Content != "2026-03-01T21:00:00+09:00 (Sunday, Asia/Tokyo)" {
		t.Errorf("clock: %q %v", r.Content, err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "clock", `{}`))
	if err != nil || !strings.HasPrefix(r.Content, "2026-03-01T12:00:00Z") {
		t.Errorf("clock UTC: %q %v", r.Content, err)
	}
	_, err = tb.Call(ctx, approve(t, tb, "clock", `{"timezone":"Mars/Olympus"}`))
	wantKind(t, err, InvalidArguments)
}

func TestWorkspaceFiles(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "escape"))
	tool := builtinTool("read_file")
	tool.MaxOutputBytes = 8
	tb := newToolbox(t, []plan.Tool{tool, builtinTool("write_file"), builtinTool("list_dir")}, nil, Options{Workspace: ws})
	ctx := context.Background()

	r, err := tb.Call(ctx, approve(t, tb, "write_file", `{"path":"notes/a.txt","content":"hello"}`))
	if err != nil || r.Content != "wrote 5 bytes to notes/a.txt" {
		t.Fatalf("write: %q %v", r.Content, err)
	}
	if _, err := tb.Call(ctx, approve(t, tb, "write_file", `{"path":"notes/a.txt","content":" world","append":true}`)); err != nil {
		t.Fatal(err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "read_file", `{"path":"notes/a.txt"}`))
	if err != nil || r.Content != "hello wo" || !r.Truncated || r.Size != 11 || r.Limit != 8 {
		t.Errorf("read with max_output_bytes 8: %+v %v; want the first 8 of 11 bytes", r, err)
	}
	if note := r.TruncationNote(); note != "[output truncated at max_output_bytes (8): the first 8 of 11 bytes are shown]" {
		t.Errorf("note %q", note)
	}
	r, err = tb.Call(ctx, approve(t, tb, "read_file", `{"path":"notes/a.txt","offset":6}`))
	if err != nil || r.Content != "world" || r.Truncated {
		t.Errorf("read from offset: %+v %v", r, err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "list_dir", `{}`))
	if err != nil || r.Content != "escape\nnotes/\n" {
		t.Errorf("list: %q %v", r.Content, err)
	}
	// An absolute path inside the workspace is made relative by Canonical,
	// before the gate; the executor takes only the canonical form.
	abs, _ := json.Marshal(map[string]string{"path": filepath.Join(ws, "notes", "a.txt")})
	canon, err := tb.Canonical("read_file", abs)
	if err != nil || string(canon) != `{"path":"notes/a.txt"}` {
		t.Errorf("Canonical of an absolute path inside the workspace: %s %v", canon, err)
	}
	if r, err := tb.Call(ctx, approve(t, tb, "read_file", string(canon))); err != nil || r.Content != "hello wo" {
		t.Errorf("absolute path inside the workspace, canonical: %q %v", r.Content, err)
	}
	if _, err := tb.Call(ctx, approve(t, tb, "read_file", string(abs))); !errors.Is(err, ErrNotCanonical) {
		t.Errorf("absolute path passed to the executor as it is: %v, want ErrNotCanonical", err)
	}

	for _, args := range []string{
		`{"path":"../x.txt"}`,
		`{"path":"notes/../../x.txt"}`,
		fmt.Sprintf(`{"path":%q}`, filepath.Join(outside, "secret.txt")),
	} {
		_, err := tb.Call(ctx, approve(t, tb, "read_file", args))
		if !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("read %s: %v, want ErrOutsideWorkspace", args, err)
		}
		_, err = tb.Call(ctx, approve(t, tb, "write_file", strings.TrimSuffix(args, "}")+`,"content":"x"}`))
		if !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("write %s: %v, want ErrOutsideWorkspace", args, err)
		}
	}
	// A symlink inside the workspace that points out of it is refused too.
	if r, err := tb.Call(ctx, approve(t, tb, "read_file", `{"path":"escape/secret.txt"}`)); err == nil {
		t.Errorf("read through a symlink out of the workspace: %q", r.Content)
	}
	if _, err := tb.Call(ctx, approve(t, tb, "write_file", `{"path":"escape/new.txt","content":"x"}`)); err == nil {
		t.Error("wrote through a symlink out of the workspace")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("file created outside the workspace")
	}
	_, err = tb.Call(ctx, approve(t, tb, "read_file", `{"path":"missing.txt"}`))
	if f := wantKind(t, err, Error); strings.Contains(f.Error(), ws) {
		t.Errorf("error shows the workspace's absolute path: %v", err)
	}
}

func TestWorkspaceToolsWithoutWorkspace(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("read_file")}, nil, Options{})
	_, err := tb.Call(context.Background(), approve(t, tb, "read_file", `{"path":"a"}`))
	if !errors.Is(err, ErrNoWorkspace) {
		t.Errorf("error %v", err)
	}
}

func TestHTTPGetAllowList(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "should never be read")
	}))
	defer other.Close()
	otherURL, _ := url.Parse(other.URL)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			// Same IP, other port: a different host:port, not allowed.
			http.Redirect(w, r, "http://localhost:"+otherURL.Port()+"/", http.StatusFound)
			return
		}
		io.WriteString(w, "page body")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tb := newToolbox(t, []plan.Tool{builtinTool("http_get")}, nil, Options{HTTPAllowHosts: []string{"127.0.0.1:" + u.Port()}})
	ctx := context.Background()
	r, err := tb.Call(ctx, approve(t, tb, "http_get", fmt.Sprintf(`{"url":%q}`, srv.URL+"/page")))
	if err != nil || r.Content != "page body" {
		t.Fatalf("allowed host: %q %v", r.Content, err)
	}
	_, err = tb.Call(ctx, approve(t, tb, "http_get", fmt.Sprintf(`{"url":%q}`, other.URL)))
	if !errors.Is(err, ErrHostNotAllowed) {
		t.Errorf("other port: %v", err)
	}
	_, err = tb.Call(ctx, approve(t, tb, "http_get", fmt.Sprintf(`{"url":%q}`, srv.URL+"/redirect")))
	if !errors.Is(err, ErrHostNotAllowed) {
		t.Errorf("redirect out of the allow-list: %v", err)
	}
	_, err = tb.Call(ctx, approve(t, tb, "http_get", `{"url":"file:///etc/passwd"}`))
	wantKind(t, err, InvalidArguments)

	globbed := newToolbox(t, []plan.Tool{builtinTool("http_get")}, nil, Options{HTTPAllowHosts: []string{"127.0.0.*"}})
	if _, err := globbed.Call(ctx, approve(t, globbed, "http_get", fmt.Sprintf(`{"url":%q}`, other.URL))); err != nil {
		t.Errorf("glob allow-list: %v", err)
	}
}

// TestHTTPGetToolAllowHosts gives two http_get tools of one toolbox their
// own allow_hosts: each fetches only its own hosts, the toolbox-wide
// Options.HTTPAllowHosts applies only to a tool without a list, and host
// names match without regard to case.
func TestHTTPGetToolAllowHosts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "page body")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tool := func(name string, hosts ...string) plan.Tool {
		t := builtinTool("http_get")
		t.Address, t.AllowHosts = "tool."+name, hosts
		return t
	}
	tb := newToolbox(t, []plan.Tool{
		tool("local", "127.0.0.1:"+u.Port()),
		tool("docs", "docs.example.com", "*.EXAMPLE.org"),
		tool("default"),
	}, nil, Options{HTTPAllowHosts: []string{"localhost:" + u.Port()}})
	ctx := context.Background()
	get := func(name, rawURL string) error {
		r, err := tb.Call(ctx, approve(t, tb, name, fmt.Sprintf(`{"url":%q}`, rawURL)))
		if err == nil && r.Content != "page body" {
			t.Errorf("%s %s: %q", name, rawURL, r.Content)
		}
		return err
	}
	if err := get("local", srv.URL); err != nil {
		t.Errorf("local may fetch its own host: %v", err)
	}
	if err := get("local", "http://localhost:"+u.Port()); !errors.Is(err, ErrHostNotAllowed) {
		t.Errorf("local fetched a host of the toolbox-wide list only: %v", err)
	}
	if err := get("docs", srv.URL); !errors.Is(err, ErrHostNotAllowed) {
		t.Errorf("docs fetched another tool's host: %v", err)
	}
	if err := get("default", "http://LocalHost:"+u.Port()); err != nil {
		t.Errorf("a tool without allow_hosts uses Options.HTTPAllowHosts: %v", err)
	}
	if err := get("default", srv.URL); !errors.Is(err, ErrHostNotAllowed) {
		t.Errorf("default fetched a host on no list of its own: %v", err)
	}
	if !hostAllowed([]string{"*.EXAMPLE.org"}, &url.URL{Host: "Wiki.Example.ORG"}) {
		t.Error("host names should match without regard to case")
	}
	if hostAllowed([]string{"*.example.org"}, &url.URL{Host: "example.org"}) {
		t.Error("*.example.org should not match example.org itself")
	}
}

func TestDelegate(t *testing.T) {
	var got [2]string
	tb := newToolbox(t, []plan.Tool{builtinTool("delegate")}, nil, Options{Delegate: func(ctx context.Context, target, task string) (string, error) {
		got = [2]string{target, task}
		return "critique: fine", nil
	}})
	r, err := tb.Call(context.Background(), approve(t, tb, "delegate", `{"target":"critic","task":"review"}`))
	if err != nil || r.Content != "critique: fine" || got != [2]string{"critic", "review"} {
		t.Errorf("%q %v %v", r.Content, err, got)
	}
	none := newToolbox(t, []plan.Tool{builtinTool("delegate")}, nil, Options{})
	_, err = none.Call(context.Background(), approve(t, none, "delegate", `{"target":"critic","task":"review"}`))
	if !errors.Is(err, ErrNotConfigured) {
		t.Errorf("no delegate function: %v", err)
	}
}

func TestKnowledgeTools(t *testing.T) {
	store, err := knowledge.Open(filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "svc", "api"), 0o755)
	os.WriteFile(filepath.Join(ws, "conventions.md"), []byte("Use British spelling."), 0o644)
	os.WriteFile(filepath.Join(ws, "svc", "conventions.md"), []byte("Services log JSON."), 0o644)
	tb := newToolbox(t, allBuiltins(), nil, Options{Knowledge: store, Workspace: ws, Conventions: "conventions", Agent: "agent.researcher"})
	ctx := context.Background()
	r, err := tb.Call(ctx, approve(t, tb, "store_knowledge", `{"subject":"Earth","predicate":"has","object":"one moon","confidence":0.95}`))
	if err != nil || r.Content != "stored: Earth has one moon" {
		t.Fatalf("store: %q %v", r.Content, err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "recall_knowledge", `{"query":"how many moons does Earth have"}`))
	if err != nil || !strings.Contains(r.Content, "Earth has one moon (confidence 0.95") {
		t.Errorf("recall: %q %v", r.Content, err)
	}
	all, _ := store.All(ctx)
	if len(all) != 1 || all[0].Source != "agent.researcher" {
		t.Errorf("stored facts %+v", all)
	}
	r, err = tb.Call(ctx, approve(t, tb, "recall_knowledge", `{"query":"logging","scope":"conventions","dir":"svc/api"}`))
	if err != nil || !strings.Contains(r.Content, "Services log JSON.") || !strings.Contains(r.Content, "British") ||
		strings.Index(r.Content, "Services") > strings.Index(r.Content, "British") {
		t.Errorf("conventions, nearest first: %q %v", r.Content, err)
	}
	_, err = tb.Call(ctx, approve(t, tb, "recall_knowledge", `{"query":"x","scope":"conventions","dir":"../.."}`))
	if !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("conventions outside the workspace: %v", err)
	}
	none := newToolbox(t, allBuiltins(), nil, Options{})
	_, err = none.Call(ctx, approve(t, none, "recall_knowledge", `{"query":"x"}`))
	if !errors.Is(err, ErrNotConfigured) {
		t.Errorf("no store: %v", err)
	}
}

func TestToolsListsInStableOrder(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("clock"), builtinTool("calculator")}, nil, Options{})
	var names []string
	for _, i := range tb.Tools() {
		names = append(names, i.Name)
	}
	if strings.Join(names, ",") != "clock,calculator" || strings.Join(tb.Names(), ",") != "clock,calculator" {
		t.Errorf("order %v", names)
	}
	_, err := NewToolbox(context.Background(), []plan.Tool{builtinTool("clock"), builtinTool("clock")}, nil, Options{})
	if err == nil || !strings.Contains(err.Error(), "duplicate tool name") {
		t.Errorf("duplicate: %v", err)
	}
}

func TestPanickingDelegateIsAFailure(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("delegate")}, nil, Options{Delegate: func(context.Context, string, string) (string, error) {
		panic("delegate exploded")
	}})
	_, err := tb.Call(context.Background(), approve(t, tb, "delegate", `{"target":"critic","task":"review"}`))
	if f := wantKind(t, err, Error); !strings.Contains(f.Error(), "tool panicked: delegate exploded") {
		t.Errorf("error %v", err)
	}
}
