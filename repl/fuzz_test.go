package repl

import (
	"context"
	"io"
	"strings"
	"testing"
)

// FuzzSession feeds arbitrary input to the parts of a session that read
// what a person types: expressions, NeedsMore, completion, and the
// diagnostics writer. None may panic, and the session must stay usable.
// Commands are left out: they run tools and agents.
func FuzzSession(f *testing.F) {
	for _, seed := range []string{
		`var.topic`, `agent.assistant.loop`, `{a = [1, {b = null}]}`, `upper(`, `"${`, "<<EOT\nx\nEOT",
		`[for n in local.limits : n * 2]`, `agent.`, `:gate policy.rules {`, "\xff", `tool.calculator.executor.kind`,
		`try(nope, 1)`, `jsondecode("{\"a\": [1, 2]}")`, `tomap({a = 1})`, `toset(["a", "b"])`, `1/0`,
	} {
		f.Add(seed)
	}
	s := New(Options{})
	if diags := s.Load("../testdata/repl/config"); diags.HasErrors() {
		f.Fatal(diags.Error())
	}
	f.Fuzz(func(t *testing.T, in string) {
		s.NeedsMore(in)
		for i := 0; i <= len(in); i++ {
			s.CompleteAt(in[:i])
		}
		if strings.HasPrefix(strings.TrimSpace(in), ":") {
			return
		}
		_, _, diags := s.Handle(context.Background(), in)
		if err := WriteDiagnostics(io.Discard, s.Files(), diags); err != nil {
			t.Fatal(err)
		}
		if out, _, diags := s.Handle(context.Background(), "var.topic"); out != "\"tides\"\n" || len(diags) > 0 {
			t.Fatalf("after %q the session answers %q %v", in, out, diags)
		}
	})
}
