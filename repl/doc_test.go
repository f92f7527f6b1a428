package repl

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the recorded session in docs/repl.md")

const docPath = "../docs/repl.md"

// recorded matches the session block of docs/repl.md: the marker comment
// and the fenced block after it.
var recorded = regexp.MustCompile("(?s)(<!-- recorded session: examples/quickstart.hcl -->\n```text\n)(.*?)(```\n)")

// TestRecordedSessionInDocs feeds the inputs of the session recorded in
// docs/repl.md to a Session on a copy of examples/quickstart.hcl and
// compares what it prints with what the document shows. Durations, which
// vary, are compared as <dur>. With -update the document is rewritten.
func TestRecordedSessionInDocs(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	m := recorded.FindSubmatchIndex(doc)
	if m == nil {
		t.Fatalf("%s has no recorded session block", docPath)
	}
	block := string(doc[m[4]:m[5]])
	inputs := sessionInputs(block)
	if len(inputs) == 0 {
		t.Fatalf("the recorded session has no inputs")
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"quickstart.hcl", "scripts/quickstart.json"} {
		b, err := os.ReadFile(filepath.Join("../examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clock := &testClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	s := New(Options{Now: clock.Now, Rand: &counter{}})
	defer s.Close()
	if diags := s.Load(dir); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got := transcript(context.Background(), s, inputs)
	if *update {
		out := append(append(append([]byte{}, doc[:m[4]]...), got...), doc[m[5]:]...)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if cells(got) != cells(block) {
		t.Errorf("docs/repl.md's recorded session differs from a real one (go test ./repl -run RecordedSession -update rewrites it):\n%s",
			cmp.Diff(normalize(block), normalize(got)))
	}
}

// cells compares transcripts whatever the padding of table columns, which
// follows the width of the durations.
func cells(s string) string {
	var lines []string
	for _, l := range strings.Split(normalize(s), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

// sessionInputs reads the inputs of a transcript: the lines after a prompt
// ("> " or "step> "), with their continuation lines ("... ").
func sessionInputs(block string) []string {
	var inputs []string
	for _, l := range strings.Split(block, "\n") {
		switch {
		case l == ">" || l == "step>":
			inputs = append(inputs, "")
		case strings.HasPrefix(l, "> "):
			inputs = append(inputs, l[2:])
		case strings.HasPrefix(l, "step> "):
			inputs = append(inputs, l[6:])
		case strings.HasPrefix(l, "... ") && len(inputs) > 0:
			inputs[len(inputs)-1] += "\n" + l[4:]
		}
	}
	return inputs
}

// transcript runs inputs through a session and writes what a terminal
// would show: each prompt and input, then the output and the diagnostics.
func transcript(ctx context.Context, s *Session, inputs []string) string {
	var b strings.Builder
	for _, in := range inputs {
		lines := strings.Split(in, "\n")
		b.WriteString(strings.TrimRight(s.Prompt()+lines[0], " ") + "\n")
		for _, l := range lines[1:] {
			b.WriteString(s.ContinuationPrompt() + l + "\n")
		}
		out, _, diags := s.Handle(ctx, in)
		b.WriteString(out)
		_ = WriteDiagnostics(&b, s.Files(), diags)
	}
	return b.String()
}
