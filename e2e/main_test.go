package e2e

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// symbiBin is the binary TestMain builds once for every test in the run.
var symbiBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	flag.Parse()
	// The tests mostly wait (for fake-server latency, timeouts, child
	// processes), so run more of them at once than there are cores, unless
	// -parallel says otherwise.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "6")
	}
	dir, err := os.MkdirTemp("", "symbi-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// symbi-opa beside symbi, where symbi looks for it first: the OPA
	// policies run in it, as a user's would.
	bin := filepath.Join(dir, "symbi")
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/symbi", "./cmd/symbi-opa")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/symbi ./cmd/symbi-opa: %v\n%s", err, out)
		return 1
	}
	symbiBin = bin
	return m.Run()
}

// hangLimit is how long one symbi process may take before the test calls it
// hung. It detects hangs; it is not a speed requirement.
const hangLimit = 3 * time.Minute

// call is one invocation of the binary.
type call struct {
	dir     string   // working directory; the test's temp dir when empty
	env     []string // added to a cleaned environment
	stdin   string
	timeout time.Duration // hang detector; hangLimit when zero
}

// result is what a finished symbi process left.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\n--- stdout\n%s--- stderr\n%s", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// symbi runs the binary and returns how it ended. A process that outlives
// the hang limit is killed and fails the test.
func symbi(t *testing.T, c call, args ...string) result {
	t.Helper()
	return start(t, c, args...).wait(t)
}

// process is a symbi process running in the background.
type process struct {
	cmd            *exec.Cmd
	args           []string
	timeout        time.Duration
	ctx            context.Context
	cancel         context.CancelFunc
	stdout, stderr bytes.Buffer
	started        time.Time
}

// start starts the binary without waiting for it. The hang detector runs
// from now.
func start(t *testing.T, c call, args ...string) *process {
	t.Helper()
	p := &process{args: args, timeout: c.timeout}
	if p.timeout == 0 {
		p.timeout = hangLimit
	}
	p.ctx, p.cancel = context.WithTimeout(context.Background(), p.timeout)
	p.cmd = exec.CommandContext(p.ctx, symbiBin, args...)
	p.cmd.Dir = c.dir
	if p.cmd.Dir == "" {
		p.cmd.Dir = t.TempDir()
	}
	p.cmd.Env = append(cleanEnv(), c.env...)
	p.cmd.Stdin = strings.NewReader(c.stdin)
	p.cmd.WaitDelay = 5 * time.Second
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		p.cancel()
		t.Fatalf("symbi %s: %v", strings.Join(args, " "), err)
	}
	t.Cleanup(func() {
		p.cancel()
		p.cmd.Wait()
	})
	return p
}

// wait waits for the process to end and returns how it ended.
func (p *process) wait(t *testing.T) result {
	t.Helper()
	defer p.cancel()
	err := p.cmd.Wait()
	r := result{stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.started)}
	var exit *exec.ExitError
	switch {
	case p.ctx.Err() == context.DeadlineExceeded:
		t.Fatalf("symbi %s: still running after %v (hang detector), killed\n%s", strings.Join(p.args, " "), p.timeout, r)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("symbi %s: %v", strings.Join(p.args, " "), err)
	}
	return r
}

// cleanEnv is this process's environment without anything that could change
// what symbi does behind a test's back: SYMBI_* variables, API keys, and
// CI (which makes a run without a terminal ask nobody).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SYMBI_") || strings.HasSuffix(name, "_API_KEY") || name == "CI" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// fixture copies testdata/e2e/NAME into a fresh temp dir and returns the
// copy's path, so runs write nothing into the repository.
func fixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	copyTree(t, filepath.Join("..", "testdata", "e2e", name), dst)
	return dst
}

// copyTree copies the regular files and directories under src to dst,
// keeping permissions.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
}

// onlyRun returns the id of the one run under stateDir.
func onlyRun(t *testing.T, stateDir string) string {
	t.Helper()
	runs, err := journal.ListRuns(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs in %s, want 1", len(runs), stateDir)
	}
	return runs[0].ID
}

// readJournal reads a run's journal; a line that is not a valid event fails
// the test.
func readJournal(t *testing.T, stateDir, id string) []journal.Event {
	t.Helper()
	evs, err := journal.ReadFile(journal.Path(stateDir, id))
	if err != nil {
		t.Fatalf("journal of run %s: %v", id, err)
	}
	return evs
}

// terminated decodes the journal's last event, which must be terminated.
func terminated(t *testing.T, evs []journal.Event) journal.TerminatedData {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("empty journal")
	}
	last := evs[len(evs)-1]
	if last.Type != journal.Terminated {
		t.Fatalf("the journal ends with %s, not terminated; events: %v", last.Type, eventTypes(evs))
	}
	var d journal.TerminatedData
	if err := last.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// eventsOf decodes every event of one type into T.
func eventsOf[T any](t *testing.T, evs []journal.Event, typ string) []T {
	t.Helper()
	var out []T
	for _, ev := range evs {
		if ev.Type != typ {
			continue
		}
		var v T
		if err := ev.Decode(&v); err != nil {
			t.Fatalf("%s event %d: %v", typ, ev.Seq, err)
		}
		out = append(out, v)
	}
	return out
}

func eventTypes(evs []journal.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// writeFile writes a file under dir, creating directories.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
