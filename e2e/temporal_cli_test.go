package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Temporal commands without a Temporal service: what symbi says when
// symbi-temporal is missing, and what it refuses before it looks.

// lonelySymbi is a copy of the symbi binary in a directory of its own,
// with a PATH that holds no symbi-temporal.
func lonelySymbi(t *testing.T) (bin string, env []string) {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(symbiBin)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "symbi")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "TEMPORAL_") {
			env = append(env, kv)
		}
	}
	return bin, append(env, "PATH="+dir)
}

func runLonely(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join("..", "examples")
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// Without symbi-temporal beside symbi or on PATH, every Temporal command
// fails with exit 2 and says how to build it, and starts nothing.
func TestTemporalBinaryMissing(t *testing.T) {
	bin, env := lonelySymbi(t)
	for _, args := range [][]string{
		{"worker", "."},
		{"run", "--temporal=127.0.0.1:1", "quickstart.hcl"},
		{"runs", "--temporal=127.0.0.1:1"},
		{"approve", "--temporal=127.0.0.1:1"},
	} {
		r := runLonely(t, bin, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "symbi-temporal is neither beside symbi") || !strings.Contains(r.stderr, "go build -o bin/ ./cmd/...") {
			t.Errorf("symbi %s: want exit 2 saying how to build symbi-temporal\n%s", strings.Join(args, " "), r)
		}
	}
}

// settingsConfig is the quickstart agent with a temporal block in its
// settings.
func settingsConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, filepath.Join("..", "examples", "scripts"), filepath.Join(dir, "scripts"))
	b, err := os.ReadFile(filepath.Join("..", "examples", "quickstart.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "symbi {", `symbi {
  temporal {
    address    = "temporal.example:7233"
    namespace  = "agents"
    task_queue = "research"
  }
`, 1)
	if cfg == string(b) {
		t.Fatal("examples/quickstart.hcl has no symbi block")
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// With a temporal block in the settings, symbi run goes to Temporal
// without --temporal (here: it looks for symbi-temporal), --local runs in
// the process, and --local with --temporal is refused.
func TestTemporalSettingsBlockRun(t *testing.T) {
	bin, env := lonelySymbi(t)
	dir := settingsConfig(t)
	run := func(args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		r := result{stdout: out.String(), stderr: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run("run", "main.hcl"); r.code != 2 || !strings.Contains(r.stderr, "symbi-temporal is neither beside symbi") {
		t.Errorf("run with a temporal block: want it to go to Temporal (and find no symbi-temporal)\n%s", r)
	}
	if r := run("run", "--local", "--state-dir", t.TempDir(), "main.hcl"); r.code != 0 || !strings.Contains(r.stdout, "42") {
		t.Errorf("run --local: want a local run\n%s", r)
	}
	if r := run("run", "--local", "--temporal", "main.hcl"); r.code != 2 || !strings.Contains(r.stderr, "--local and --temporal contradict each other") {
		t.Errorf("run --local --temporal: want exit 2\n%s", r)
	}
	if r := run("run", "--local", "--detach", "main.hcl"); r.code != 2 || !strings.Contains(r.stderr, "--detach needs --temporal") {
		t.Errorf("run --local --detach: want exit 2\n%s", r)
	}
}

// symbi worker passes the block's address, namespace and task queue to
// symbi-temporal, unless a flag or the environment says otherwise.
func TestTemporalSettingsBlockWorker(t *testing.T) {
	bin, env := lonelySymbi(t)
	dir := settingsConfig(t)
	// A stand-in symbi-temporal beside symbi that prints its arguments.
	fake := filepath.Join(filepath.Dir(bin), "symbi-temporal")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	worker := func(extraEnv []string, args ...string) string {
		cmd := exec.Command(bin, append([]string{"worker"}, args...)...)
		cmd.Dir, cmd.Env = dir, append(slices.Clone(env), extraEnv...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("symbi worker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got, want := worker(nil, "."), "--address temporal.example:7233 --namespace agents worker --task-queue research ."; got != want {
		t.Errorf("from the block: symbi-temporal got %q, want %q", got, want)
	}
	if got, want := worker([]string{"TEMPORAL_ADDRESS=env:7233", "TEMPORAL_NAMESPACE=envns"}, "."), "worker --task-queue research ."; got != want {
		t.Errorf("with the environment set: symbi-temporal got %q, want %q", got, want)
	}
	if got, want := worker(nil, "--temporal", "flag:7233", "--task-queue", "q", "."), "--address flag:7233 --namespace agents worker --task-queue q ."; got != want {
		t.Errorf("with flags: symbi-temporal got %q, want %q", got, want)
	}
	if got, want := worker(nil, "--engine-idle", "90s", "--max-engines", "4", "."), "--address temporal.example:7233 --namespace agents worker --task-queue research --engine-idle 1m30s --max-engines 4 ."; got != want {
		t.Errorf("with the engine cache's flags: symbi-temporal got %q, want %q", got, want)
	}
}
