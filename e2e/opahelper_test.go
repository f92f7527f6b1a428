package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helpers are the running processes whose executable is the symbi-opa
// built beside symbiBin (Linux: /proc/PID/exe).
func helpers(t *testing.T) []string {
	t.Helper()
	want := filepath.Join(filepath.Dir(symbiBin), "symbi-opa")
	exes, err := filepath.Glob("/proc/[0-9]*/exe")
	if err != nil || len(exes) == 0 {
		t.Skip("no /proc to look for processes in")
	}
	var out []string
	for _, exe := range exes {
		if target, err := os.Readlink(exe); err == nil && target == want {
			out = append(out, filepath.Base(filepath.Dir(exe)))
		}
	}
	return out
}

// TestOPAHelperLeavesNoProcess: commands whose plan has an opa policy
// decide it in symbi-opa, and leave no symbi-opa running when they end.
func TestOPAHelperLeavesNoProcess(t *testing.T) {
	dir := repoExamples(t)
	for _, args := range [][]string{
		{"validate", "security.hcl"},
		{"policy", "eval", "--explain", "policy.gate", "--action", `{"type":"tool_call","tool":"shell","arguments":{"cmd":"ls"}}`, "security.hcl"},
		{"policy", "test", "policies"},
	} {
		r := symbi(t, call{dir: dir}, args...)
		if r.code != 0 && !(args[0] == "policy" && args[1] == "eval") {
			t.Fatalf("symbi %s: %s", strings.Join(args, " "), r)
		}
		if args[1] == "eval" && !strings.Contains(r.stdout, "engine:   opa") {
			t.Errorf("policy eval of an opa policy:\n%s", r)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(helpers(t)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // a helper exits just after symbi
	}
	if left := helpers(t); len(left) > 0 {
		t.Errorf("symbi-opa processes left running: %v", left)
	}
}

// TestOPAHelperOnlyForOPAPolicies: a plan without an opa policy runs with
// no symbi-opa anywhere; one with an opa policy then says how to build it.
func TestOPAHelperOnlyForOPAPolicies(t *testing.T) {
	alone := filepath.Join(t.TempDir(), "symbi")
	b, err := os.ReadFile(symbiBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := repoExamples(t)
	run := func(args ...string) result {
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		cmd := exec.CommandContext(ctx, alone, args...)
		cmd.Dir = dir
		cmd.Env = append(cleanEnv(), "PATH=/usr/bin:/bin")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := result{stdout: stdout.String(), stderr: stderr.String()}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			r.code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run("run", "quickstart.hcl"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "42") {
		t.Fatalf("the quickstart (rules) without symbi-opa:\n%s", r)
	}
	r := run("validate", "security.hcl")
	if r.code != 2 || !strings.Contains(r.stderr, "symbi-opa is neither beside symbi") || !strings.Contains(r.stderr, "go build -o bin/ ./cmd/...") {
		t.Fatalf("an opa policy without symbi-opa: want exit 2 saying how to build it\n%s", r)
	}
	// The policy is not invalid: what decides it is missing, and the
	// diagnostic says so rather than blaming the Rego.
	if !strings.Contains(r.stderr, "Error: No OPA engine") || strings.Contains(r.stderr, "Invalid Rego policy") {
		t.Fatalf("an opa policy without symbi-opa: want the diagnostic headed \"No OPA engine\"\n%s", r)
	}
}

// repoExamples is a copy of the repository's examples, for runs that write
// state.
func repoExamples(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "examples")
	copyTree(t, filepath.Join("..", "examples"), dir)
	return dir
}
