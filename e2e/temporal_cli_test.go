package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
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

// --best-of does not run on Temporal yet: refused before anything starts.
func TestTemporalRefusesBestOf(t *testing.T) {
	bin, env := lonelySymbi(t)
	r := runLonely(t, bin, env, "run", "--temporal=127.0.0.1:1", "--best-of", "answer", "best_of_n.hcl", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "--best-of does not run on Temporal yet") {
		t.Errorf("want exit 2 refusing --best-of on Temporal\n%s", r)
	}
}
