package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ergochat/readline"
	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/repl"
)

func replTestSession(t *testing.T) *repl.Session {
	t.Helper()
	sess := repl.New(repl.Options{})
	t.Cleanup(func() { sess.Close() })
	if diags := sess.Load("../../testdata/repl/config"); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return sess
}

// TestReplCompleter drives completion through readline's AutoCompleter
// interface, as the terminal does on Tab: suffixes to insert, and how much
// of the line they complete.
func TestReplCompleter(t *testing.T) {
	var c readline.AutoCompleter = completer{replTestSession(t)}
	for _, tc := range []struct {
		line   string
		pos    int // -1: end of line
		want   []string
		length int
	}{
		{":pl", -1, []string{"an"}, 3},
		{":", -1, []string{"help", "load", "reload", "plan", "tools", "gate", "call", "run", "step", "continue", "abort", "journal", "funcs", "doc", "quit"}, 1},
		{"agent.assistant.lo", -1, []string{"op"}, 18},
		{"agent.assistant.loop.mo", -1, []string{"de"}, 23},
		{"upper(var.to", -1, []string{"pic"}, 6},
		{"var.to + 1", 6, []string{"pic"}, 6}, // the cursor, not the end of the line
		{":tools agent.", -1, []string{"assistant", "researcher"}, 6},
		{"\"é\" == lowe", -1, []string{"r("}, 4},
		{"nothing", -1, nil, 7},
	} {
		line := []rune(tc.line)
		pos := tc.pos
		if pos < 0 {
			pos = len(line)
		}
		got, length := c.Do(line, pos)
		var gotS []string
		for _, r := range got {
			gotS = append(gotS, string(r))
		}
		if !cmp.Equal(gotS, tc.want) || length != tc.length {
			t.Errorf("Do(%q, %d) = %q, %d; want %q, %d", tc.line, pos, gotS, length, tc.want, tc.length)
		}
	}
}

// scriptedEditor plays lines back as readline would return them, and
// records the prompts it was given.
type scriptedEditor struct {
	lines   []string
	errs    map[int]error // an error instead of the line at that index
	prompts []string
	n       int
}

func (e *scriptedEditor) SetPrompt(p string) { e.prompts = append(e.prompts, p) }

func (e *scriptedEditor) Readline() (string, error) {
	defer func() { e.n++ }()
	if err, ok := e.errs[e.n]; ok {
		return "", err
	}
	if e.n >= len(e.lines) {
		return "", io.EOF
	}
	return e.lines[e.n], nil
}

// TestReplReadInputJoinsOpenBrackets reads as the interactive loop does:
// lines are joined while the session NeedsMore, the prompt turns into the
// continuation prompt, Ctrl-C drops a half-typed input, and EOF ends a
// half-typed one.
func TestReplReadInputJoinsOpenBrackets(t *testing.T) {
	sess := replTestSession(t)
	ed := &scriptedEditor{
		lines: []string{"{", "  a = [1,", "    2]", "}", "var.topic", "[1,", "", "upper(", "dropped", "x", "(1 +"},
		errs:  map[int]error{8: readline.ErrInterrupt},
	}
	var got []string
	for {
		in, err := readInput(sess, ed)
		if err != nil {
			break
		}
		got = append(got, in)
	}
	want := []string{"{\n  a = [1,\n    2]\n}", "var.topic", "[1,\n", "x", "(1 +"}
	if !cmp.Equal(got, want) {
		t.Errorf("inputs %q, want %q", got, want)
	}
	wantPrompts := []string{
		"> ", "... ", "... ", "... ", // the object
		"> ",         // var.topic
		"> ", "... ", // [1, and the blank line that ends it
		"> ", "... ", "> ", // upper(, then Ctrl-C; x is read at the fresh prompt
		"> ", "... ", // (1 +, ended by EOF
		"> ", // EOF
	}
	if !cmp.Equal(ed.prompts, wantPrompts) {
		t.Errorf("prompts %q, want %q", ed.prompts, wantPrompts)
	}
}

func TestReplHistoryFile(t *testing.T) {
	t.Setenv("SYMBI_REPL_HISTORY", "")
	if got := historyFile(); got != "" {
		t.Errorf("empty SYMBI_REPL_HISTORY: %q", got)
	}
	t.Setenv("SYMBI_REPL_HISTORY", "/tmp/h")
	if got := historyFile(); got != "/tmp/h" {
		t.Errorf("SYMBI_REPL_HISTORY: %q", got)
	}
	os.Unsetenv("SYMBI_REPL_HISTORY")
	home := t.TempDir()
	t.Setenv("HOME", home)
	if got := historyFile(); got != filepath.Join(home, ".symbi_history") {
		t.Errorf("default: %q", got)
	}
}
