package contract

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/plan"
)

// scriptsFixture is a configuration whose commands name scripts in it, a
// script in a subdirectory through the tool's dir, a program outside it
// and a text argument that names no file.
func scriptsFixture(t *testing.T) (string, *plan.Plan) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "agent.hcl", `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "a" {
  description = "Runs a.sh"
  command {
    argv = ["sh", "a.sh", "hello"]
  }
}
tool "b" {
  description = "Runs b.sh in bin"
  command {
    argv = ["sh", "b.sh"]
    dir  = "bin"
  }
}
tool "c" {
  description = "Runs a.sh again, and the script the model reads"
  command {
    argv = ["/bin/sh", "a.sh", "script.json"]
  }
}
agent "x" {
  model = model.m
  tools = [tool.a, tool.b, tool.c]
}
`)
	write(t, dir, "script.json", `{"turns": [{"content": "hi"}]}`)
	write(t, dir, "a.sh", "echo a\n")
	write(t, dir, "bin/b.sh", "echo b\n")
	cfg, diags := interp.Compile(dir, interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return dir, cfg.Plan
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The scripts a start lists are those under the configuration directory
// that a command's argv names, each once, without the plan's own files
// and without programs outside the directory.
func TestScriptFiles(t *testing.T) {
	dir, p := scriptsFixture(t)
	got, err := ScriptFiles(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.FileRef{
		{Path: "a.sh", SHA256: plan.NewFileRef("", []byte("echo a\n")).SHA256},
		{Path: "bin/b.sh", SHA256: plan.NewFileRef("", []byte("echo b\n")).SHA256},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("scripts (-want +got):\n%s", d)
	}
	s, err := NewStart(p, dir, "agent.x", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if s.ScriptsDigest != ScriptsDigest(got) || ScriptsDigest(nil) == ScriptsDigest(got) {
		t.Fatalf("scripts digest %s", s.ScriptsDigest)
	}
	if err := s.Verify(p, dir); err != nil {
		t.Fatalf("the client's own directory: %v", err)
	}
}

// A worker refuses a start whose scripts differ from its own, that lists
// a script it lacks, or that lacks a script it has; each is named.
func TestVerifyScripts(t *testing.T) {
	dir, p := scriptsFixture(t)
	s, err := NewStart(p, dir, "agent.x", "hi")
	if err != nil {
		t.Fatal(err)
	}
	worker := t.TempDir()
	for _, name := range []string{"agent.hcl", "script.json", "bin/b.sh"} {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		write(t, worker, name, string(b))
	}
	refused := func(s Start, want ...string) {
		t.Helper()
		err := s.Verify(p, worker)
		var fm *FileMismatchError
		if !errors.As(err, &fm) {
			t.Fatalf("Verify: %v, want a *FileMismatchError", err)
		}
		var paths []string
		for _, m := range fm.Files {
			paths = append(paths, m.Path)
		}
		if d := cmp.Diff(want, paths); d != "" {
			t.Fatalf("refused files (-want +got):\n%s\n%v", d, err)
		}
	}
	refused(s, "a.sh") // missing here
	write(t, worker, "a.sh", "echo other\n")
	refused(s, "a.sh") // differs
	if err := s.Verify(p, worker); !strings.Contains(err.Error(), "a.sh is sha256:") {
		t.Fatalf("message: %v", err)
	}
	write(t, worker, "a.sh", "echo a\n")
	if err := s.Verify(p, worker); err != nil {
		t.Fatalf("the same files: %v", err)
	}

	// A client without bin/b.sh lists none; this worker has it.
	if err := os.Remove(filepath.Join(dir, "bin", "b.sh")); err != nil {
		t.Fatal(err)
	}
	short, err := NewStart(p, dir, "agent.x", "hi")
	if err != nil {
		t.Fatal(err)
	}
	refused(short, "bin/b.sh")
	if err := short.Verify(p, worker); !strings.Contains(err.Error(), "the run's client had no such file") {
		t.Fatalf("message: %v", err)
	}

	// A start from before clients listed scripts is checked by the plan's
	// files alone.
	legacy := Start{Plan: s.Plan, PlanDigest: s.PlanDigest}
	write(t, worker, "a.sh", "echo other\n")
	if err := legacy.Verify(p, worker); err != nil {
		t.Fatalf("legacy start: %v", err)
	}

	// A listed path must lie in the configuration directory.
	odd := s
	odd.Scripts = append([]plan.FileRef{{Path: "../outside.sh", SHA256: "00"}}, s.Scripts...)
	odd.ScriptsDigest = ScriptsDigest(odd.Scripts)
	write(t, worker, "a.sh", "echo a\n")
	refused(odd, "../outside.sh")

	// Scripts that do not match their digest are refused before any file
	// is read.
	forged := s
	forged.Scripts = []plan.FileRef{{Path: "a.sh", SHA256: "00"}}
	if _, err := forged.Decode(); err == nil || !strings.Contains(err.Error(), "scripts' digest") {
		t.Fatalf("forged scripts: %v", err)
	}
}

// BenchmarkVerify measures what a worker pays to check a run's files
// before it runs anything, on examples/security.hcl (its files and the
// script its command tool runs): the plan's files alone (the check before
// scripts were listed), and with the scripts (ScriptFiles on the worker's
// side too). scripts/bench.sh reports the ratio.
func BenchmarkVerify(b *testing.B) {
	cfg, diags := interp.Compile(filepath.Join("..", "..", "examples", "security.hcl"), interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	p, base := cfg.Plan, cfg.BaseDir
	s, err := NewStart(p, base, "agent.ops", "x")
	if err != nil {
		b.Fatal(err)
	}
	if len(s.Scripts) == 0 {
		b.Fatal("security.hcl's start lists no script")
	}
	b.Run("files", func(b *testing.B) {
		for b.Loop() {
			if err := VerifyFiles(p, base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("files+scripts", func(b *testing.B) {
		for b.Loop() {
			if err := s.Verify(p, base); err != nil {
				b.Fatal(err)
			}
		}
	})
}
