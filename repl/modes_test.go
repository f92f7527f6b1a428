package repl

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleSession loads one of examples/*.hcl from a copy of examples/, so
// that its runs journal in a temporary directory. The copy leaves out the
// state directory a user's own runs of the examples leave there (README's
// first command makes one): its key would be copied readable by others, and
// its runs are not the test's.
func exampleSession(t *testing.T, file string) *Session {
	t.Helper()
	dir := t.TempDir()
	examples := os.DirFS("../examples")
	err := fs.WalkDir(examples, ".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".symbi":
			return fs.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dir, path), 0o755)
		}
		b, err := fs.ReadFile(examples, path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{})
	t.Cleanup(func() { s.Close() })
	if diags := s.Load(filepath.Join(dir, file)); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return s
}

// TestStepOtherModes steps through plan_execute and reflect_and_retry: the
// plan, each step's own run, and the evaluations (whose nested runs are
// indented by their depth) are phases.
func TestStepOtherModes(t *testing.T) {
	s := exampleSession(t, "plan_execute.hcl")
	handle(t, s, ":step agent.planner")
	handle(t, s, "")
	if got := handle(t, s, ""); !strings.HasPrefix(got, `plan     plan of 3 steps: s1 "Compute 6 * 7"; s2 "Compute 100 - 58"; s3 `) {
		t.Errorf("plan phase: %q", got)
	}
	out := handle(t, s, ":continue")
	for _, want := range []string{"plan     step s1 done: \"The result is 42.\"", ".s1 started: agent.planner, mode react", "Yes: 6 * 7 and 100 - 58 are both 42.\n-- run "} {
		if !strings.Contains(out, want) {
			t.Errorf("plan_execute lacks %q:\n%s", want, out)
		}
	}

	s = exampleSession(t, "reflect.hcl")
	out = handle(t, s, ":step agent.writer") + handle(t, s, ":continue")
	for _, want := range []string{
		"mode reflect_and_retry",
		`reflect  attempt 1 scored 0.60 by agent.critic: revise, "The ocean is not the cause`,
		"reflect  attempt 2 scored 0.90 by agent.critic: pass",
		"\n  run ", // the evaluator's nested run
	} {
		if !strings.Contains(out, want) {
			t.Errorf("reflect_and_retry lacks %q:\n%s", want, out)
		}
	}
}
