package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

// pathWorkspace is a workspace with the shapes the canonical form must
// see through: a link to a file, a link to a directory, a link out, a link
// that loops, a link to the state directory, and an absolute link inside.
func pathWorkspace(t testing.TB) (ws, state string) {
	t.Helper()
	ws = t.TempDir()
	state = filepath.Join(ws, ".symbi")
	for name, text := range map[string]string{
		"secret.txt":                      "the secret",
		"main.hcl":                        "# the configuration",
		"notes/a.txt":                     "a note",
		"docs/guide.md":                   "a guide",
		".symbi/approvals/x.request.json": "{}",
	} {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"notes/in":   "../secret.txt",
		"notes/docs": "../docs",
		"notes/out":  t.TempDir(),
		"loop":       "loop",
		"box":        ".symbi/approvals",
		"abs":        filepath.Join(ws, "docs"),
		"up":         "..",
		"here":       ".",
	} {
		if err := os.Symlink(target, filepath.Join(ws, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	return ws, state
}

func pathToolbox(t testing.TB) (*Toolbox, string) {
	t.Helper()
	ws, state := pathWorkspace(t)
	tb := newToolbox(t, []plan.Tool{builtinTool("read_file"), builtinTool("list_dir"), builtinTool("write_file"), builtinTool("recall_knowledge"), builtinTool("calculator")}, nil, Options{
		Workspace:   ws,
		StateDir:    state,
		Protected:   []Protected{{Path: filepath.Join(ws, "main.hcl"), What: "a file of the configuration"}},
		Conventions: "guide",
	})
	return tb, ws
}

func TestCanonicalPaths(t *testing.T) {
	tb, ws := pathToolbox(t)
	for _, tc := range []struct {
		tool, args, want string
		err              error
	}{
		{"read_file", `{"path":"secret.txt"}`, `{"path":"secret.txt"}`, nil},
		{"read_file", `{"path":"./secret.txt"}`, `{"path":"secret.txt"}`, nil},
		{"read_file", `{"path":"notes/../secret.txt"}`, `{"path":"secret.txt"}`, nil},
		{"read_file", `{"path":"notes/in"}`, `{"path":"secret.txt"}`, nil},
		{"read_file", `{"path":"notes//a.txt","offset":2}`, `{"offset":2,"path":"notes/a.txt"}`, nil},
		{"read_file", `{"path":"notes/docs/guide.md"}`, `{"path":"docs/guide.md"}`, nil},
		{"read_file", `{"path":"abs/guide.md"}`, `{"path":"docs/guide.md"}`, nil},
		{"read_file", `{"path":"here/here/secret.txt"}`, `{"path":"secret.txt"}`, nil},
		{"read_file", `{"path":"` + filepath.Join(ws, "notes", "in") + `"}`, `{"path":"secret.txt"}`, nil},
		{"write_file", `{"path":"new/dir/x.txt","content":"<&>"}`, `{"path":"new/dir/x.txt","content":"<&>"}`, nil},
		{"write_file", `{"path":"notes/docs/new.md","content":"x"}`, `{"content":"x","path":"docs/new.md"}`, nil},
		{"list_dir", `{}`, `{"path":"."}`, nil},
		{"list_dir", `{"path":"notes/.."}`, `{"path":"."}`, nil},
		{"recall_knowledge", `{"query":"q"}`, `{"query":"q"}`, nil},
		{"recall_knowledge", `{"query":"q","scope":"conventions"}`, `{"dir":".","query":"q","scope":"conventions"}`, nil},
		{"recall_knowledge", `{"query":"q","scope":"conventions","dir":"notes/docs"}`, `{"dir":"docs","query":"q","scope":"conventions"}`, nil},
		{"calculator", `{"expression":"../1"}`, `{"expression":"../1"}`, nil},

		{"read_file", `{"path":"../x"}`, "", ErrOutsideWorkspace},
		{"read_file", `{"path":"notes/../../x"}`, "", ErrOutsideWorkspace},
		{"read_file", `{"path":"/etc/passwd"}`, "", ErrOutsideWorkspace},
		{"read_file", `{"path":"notes/out/x"}`, "", ErrOutsideWorkspace},
		{"read_file", `{"path":"up/x"}`, "", ErrOutsideWorkspace},
		{"read_file", `{"path":"loop"}`, "", nil}, // too many links: an error, not a path
		{"read_file", `{"path":".symbi/approvals/x.request.json"}`, "", ErrProtectedPath},
		{"write_file", `{"path":"notes/../.symbi/approvals/x.decision.json","content":"{}"}`, "", ErrProtectedPath},
		{"write_file", `{"path":"box/x.decision.json","content":"{}"}`, "", ErrProtectedPath},
		{"list_dir", `{"path":".symbi"}`, "", ErrProtectedPath},
		{"list_dir", `{"path":"box"}`, "", ErrProtectedPath},
		{"recall_knowledge", `{"query":"q","scope":"conventions","dir":".symbi"}`, "", ErrProtectedPath},
		{"read_file", `{"path":"main.hcl"}`, "", ErrProtectedPath},
		{"write_file", `{"path":"notes/../main.hcl","content":"x","append":true}`, "", ErrProtectedPath},
		{"read_file", `{"path":"a\u0000b"}`, "", nil},
	} {
		got, err := tb.Canonical(tc.tool, json.RawMessage(tc.args))
		switch {
		case tc.want != "":
			if err != nil || string(got) != tc.want {
				t.Errorf("%s %s: %s %v, want %s", tc.tool, tc.args, got, err, tc.want)
			}
		case err == nil:
			t.Errorf("%s %s: %s, want an error", tc.tool, tc.args, got)
		case KindOf(err) != InvalidArguments && tc.err != nil:
			t.Errorf("%s %s: %v, want invalid_arguments", tc.tool, tc.args, err)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s %s: %v, want %v", tc.tool, tc.args, err, tc.err)
		case strings.Contains(err.Error(), ws) && !strings.Contains(tc.args, ws):
			t.Errorf("%s %s: the error shows the workspace's absolute path: %v", tc.tool, tc.args, err)
		}
	}
	// Canonical arguments come back as the same bytes.
	in := json.RawMessage(`{ "path" : "secret.txt" }`)
	if got, _ := tb.Canonical("read_file", in); &got[0] != &in[0] {
		t.Errorf("canonical arguments were rewritten: %s", got)
	}
}

// TestExecutorsRunOnlyTheCanonicalForm: the executor refuses a path in any
// form but the canonical one, so nothing but the gate's form can run.
func TestExecutorsRunOnlyTheCanonicalForm(t *testing.T) {
	tb, _ := pathToolbox(t)
	ctx := context.Background()
	for _, args := range []string{`{"path":"./secret.txt"}`, `{"path":"notes/in"}`, `{"path":"notes/../secret.txt"}`} {
		if r, err := tb.Call(ctx, approve(t, tb, "read_file", args)); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("read_file %s: %q %v, want ErrNotCanonical", args, r.Content, err)
		}
	}
	if r, err := tb.Call(ctx, approve(t, tb, "read_file", `{"path":"secret.txt"}`)); err != nil || r.Content != "the secret" {
		t.Errorf("read_file secret.txt: %q %v", r.Content, err)
	}
	// The executor checks protection too: a toolbox used without Canonical
	// still never touches the state directory.
	if _, err := tb.Call(ctx, approve(t, tb, "write_file", `{"path":".symbi/approvals/x.decision.json","content":"{}"}`)); !errors.Is(err, ErrProtectedPath) {
		t.Errorf("write into the state directory: %v, want ErrProtectedPath", err)
	}
}

// TestListingHidesProtectedPaths: a parent's listing leaves out the state
// directory and the configuration's files; the rest is listed as it is.
func TestListingHidesProtectedPaths(t *testing.T) {
	tb, _ := pathToolbox(t)
	r, err := tb.Call(context.Background(), approve(t, tb, "list_dir", `{"path":"."}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "abs\nbox\ndocs/\nhere\nloop\nnotes/\nsecret.txt\nup\n"; r.Content != want {
		t.Errorf("listing:\n%s\nwant:\n%s", r.Content, want)
	}
}

// TestProtectedByIdentity: a hard link to a protected file is the
// protected file, whatever its name.
func TestProtectedByIdentity(t *testing.T) {
	tb, ws := pathToolbox(t)
	if err := os.Link(filepath.Join(ws, "main.hcl"), filepath.Join(ws, "notes", "copy.hcl")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	_, err := tb.Canonical("read_file", json.RawMessage(`{"path":"notes/copy.hcl"}`))
	if !errors.Is(err, ErrProtectedPath) {
		t.Errorf("a hard link to main.hcl: %v, want ErrProtectedPath", err)
	}
}

// TestSwappedLinkIsNotFollowed changes the workspace between the gate's
// decision and the executor's open, as another process could: a directory
// or a file the gate saw becomes a link to the state directory. The
// executor refuses; nothing is written there and nothing is read from it.
func TestSwappedLinkIsNotFollowed(t *testing.T) {
	ctx := context.Background()
	swap := func(t *testing.T, ws, name, target string) {
		t.Helper()
		p := filepath.Join(ws, name)
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("directory", func(t *testing.T) {
		tb, ws := pathToolbox(t)
		args, err := tb.Canonical("write_file", json.RawMessage(`{"path":"notes/x.decision.json","content":"{\"approved\":true}"}`))
		if err != nil {
			t.Fatal(err)
		}
		approved := approve(t, tb, "write_file", string(args))
		swap(t, ws, "notes", ".symbi/approvals")
		if _, err := tb.Call(ctx, approved); err == nil {
			t.Fatal("the write followed a link that appeared after the gate")
		}
		if _, err := os.Stat(filepath.Join(ws, ".symbi", "approvals", "x.decision.json")); err == nil {
			t.Error("a decision file was written into the state directory")
		}
	})
	t.Run("file", func(t *testing.T) {
		tb, ws := pathToolbox(t)
		args, _ := tb.Canonical("read_file", json.RawMessage(`{"path":"notes/a.txt"}`))
		approved := approve(t, tb, "read_file", string(args))
		swap(t, ws, "notes/a.txt", "../main.hcl")
		if r, err := tb.Call(ctx, approved); err == nil || strings.Contains(r.Content, "configuration") {
			t.Fatalf("read through a swapped link: %q %v", r.Content, err)
		}
	})
	// The walk itself, below the canonical check: a link found where the
	// gate saw a directory or a file is ErrPathChanged.
	t.Run("walk", func(t *testing.T) {
		ws, state := pathWorkspace(t)
		w := newWorkspace(ws, []Protected{{Path: state, What: "the state directory"}})
		if _, err := w.openFile("notes/in"); !errors.Is(err, ErrPathChanged) {
			t.Errorf("openFile through a link: %v, want ErrPathChanged", err)
		}
		if _, err := w.openDir("notes/docs", false); !errors.Is(err, ErrPathChanged) {
			t.Errorf("openDir through a link: %v, want ErrPathChanged", err)
		}
		if err := w.writeFile("box/x.json", "{}", false); !errors.Is(err, ErrPathChanged) {
			t.Errorf("writeFile through a link: %v, want ErrPathChanged", err)
		}
		if err := w.writeFile("notes/in", "x", true); !errors.Is(err, ErrPathChanged) {
			t.Errorf("writeFile onto a link: %v, want ErrPathChanged", err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "secret.txt")); string(b) != "the secret" {
			t.Errorf("the link's target changed: %q", b)
		}
	})
}

// TestConventionsThroughTheWorkspace: a conventions file that is a link to
// a protected file is refused, not read; links inside the workspace work.
func TestConventionsThroughTheWorkspace(t *testing.T) {
	tb, ws := pathToolbox(t)
	ctx := context.Background()
	r, err := tb.Call(ctx, approve(t, tb, "recall_knowledge", `{"query":"q","scope":"conventions","dir":"docs"}`))
	if err != nil || !strings.Contains(r.Content, "## conventions for docs\na guide") {
		t.Errorf("conventions: %q %v", r.Content, err)
	}
	if err := os.Symlink("main.hcl", filepath.Join(ws, "guide.md")); err != nil {
		t.Fatal(err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "recall_knowledge", `{"query":"q","scope":"conventions","dir":"docs"}`))
	if !errors.Is(err, ErrProtectedPath) || strings.Contains(r.Content, "configuration") {
		t.Errorf("a conventions link to main.hcl: %q %v, want ErrProtectedPath", r.Content, err)
	}
}

func TestProtectedPathsOfAPlan(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	os.WriteFile(filepath.Join(dir, "tools", "x.py"), []byte("print(1)\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "score.sh"), []byte("echo 1\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "pick.sh"), []byte("echo 0\n"), 0o755)
	p := &plan.Plan{
		Files:     []plan.FileRef{{Path: "main.hcl"}, {Path: "policies/gate.rego"}},
		Knowledge: []plan.Knowledge{{Address: "knowledge.k", Path: ".symbi/knowledge/k.db"}},
		Tools: []plan.Tool{
			{Address: "tool.a", Executor: plan.Executor{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{{Value: "./run.sh"}, {Value: "-c"}}}}},
			{Address: "tool.b", Executor: plan.Executor{Kind: "command", Command: &plan.CommandExec{Dir: "tools", Argv: []plan.String{{Value: "python3"}, {Value: "x.py"}}}}},
		},
		BestOfN: []plan.BestOfN{{
			Address:  "best_of_n.answer",
			Scorer:   plan.Scorer{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{{Value: "./score.sh"}}}},
			Selector: plan.Selector{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{{Value: "sh"}, {Value: "pick.sh"}}}},
		}},
	}
	var got []string
	for _, pp := range ProtectedPaths(p, dir) {
		rel, _ := filepath.Rel(dir, pp.Path)
		got = append(got, filepath.ToSlash(rel)+" "+pp.What)
	}
	want := []string{
		"main.hcl a file of the configuration",
		"policies/gate.rego a file of the configuration",
		".symbi/knowledge/k.db a knowledge store",
		"run.sh a program or script a tool runs",
		"tools/x.py a program or script a tool runs",
		"score.sh a program or script a tool runs",
		"pick.sh a program or script a tool runs",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ProtectedPaths:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzCanonical feeds the canonical form any path. Whatever it is, the
// answer is an error or a path that is clean, relative, slash-separated,
// inside the workspace, free of links, outside the protected paths, and
// canonical again (the form is a fixed point).
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"secret.txt", "./secret.txt", "notes/../secret.txt", "notes/in", "box/x", ".symbi", "up/x",
		"here/here/notes/docs/guide.md", "loop", "../x", "/etc/passwd", "abs/guide.md", "notes/out/x", "", ".", "a//b/", "notes/in/..", "MAIN.HCL"} {
		f.Add(s)
	}
	ws, state := pathWorkspace(f)
	w := newWorkspace(ws, []Protected{{Path: state, What: "the state directory"}, {Path: filepath.Join(ws, "main.hcl"), What: "a file of the configuration"}})
	f.Fuzz(func(t *testing.T, p string) {
		c, err := w.canonical(p)
		if err != nil {
			if strings.Contains(err.Error(), ws) && !strings.Contains(p, ws) {
				t.Fatalf("%q: the error shows the workspace's path: %v", p, err)
			}
			return
		}
		if c != path.Clean(c) || path.IsAbs(c) || !filepath.IsLocal(filepath.FromSlash(c)) {
			t.Fatalf("%q -> %q: not a clean local path", p, c)
		}
		if c == ".symbi" || strings.HasPrefix(c, ".symbi/") || c == "main.hcl" {
			t.Fatalf("%q -> %q: a protected path", p, c)
		}
		for d := c; d != "."; d = path.Dir(d) {
			if fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(d))); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				t.Fatalf("%q -> %q: %s is a link", p, c, d)
			}
		}
		if again, err := w.canonical(c); err != nil || again != c {
			t.Fatalf("%q -> %q -> %q %v: not a fixed point", p, c, again, err)
		}
	})
}
