package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// mcpServer returns the absolute path of the npm filesystem server's entry
// point, skipping the test when node or the server is not installed.
func mcpServer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP end-to-end test needs it to run @modelcontextprotocol/server-filesystem")
	}
	p, err := filepath.Abs(filepath.Join("..", "testdata", "mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc: the MCP end-to-end tests look for left-behind node processes there")
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the npm MCP filesystem server is not installed (%v): run `cd testdata/mcp && npm ci`", err)
	}
	return p
}

// TestMCPFilesystemServer runs an agent whose tools come from the real npm
// MCP filesystem server over stdio: a tool the profile hides never reaches
// the server, list_directory's and read_text_file's results reach the
// model (its script only answers once it has read the note), and no node
// process outlives the run.
func TestMCPFilesystemServer(t *testing.T) {
	t.Parallel()
	server := mcpServer(t)
	dir := fixture(t, "mcp")
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--agent", "librarian", "--state-dir", state, "--var", "server="+server, "--var", "root="+dir, ".", "What is on the shelf?")
	if r.code != 0 {
		t.Fatalf("run:\n%s", r)
	}
	const answer = "The shelf holds alpha.txt and beta.txt; alpha.txt says the word is quince."
	if got := strings.TrimSpace(r.stdout); got != answer {
		t.Errorf("answer %q, want %q", got, answer)
	}
	assertNoProcess(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "shelf", "intruder.txt")); err == nil {
		t.Errorf("write_file reached the server: shelf/intruder.txt exists")
	}

	evs := readJournal(t, state, onlyRun(t, state))
	assertGated(t, evs)
	results := map[string]journal.ToolResultData{}
	for _, tr := range eventsOf[journal.ToolResultData](t, evs, journal.ToolResult) {
		results[tr.CallID] = tr
	}
	if tr := results["call_list"]; tr.Tool != "list_directory" || !strings.Contains(tr.Output, "alpha.txt") || !strings.Contains(tr.Output, "beta.txt") {
		t.Errorf("list_directory result %+v, want the shelf's two files", tr)
	}
	if tr := results["call_read"]; !strings.Contains(tr.Output, "quince") {
		t.Errorf("read_text_file result %+v, want the note", tr)
	}
	if tr, ok := results["call_write"]; ok {
		t.Errorf("write_file has a tool result: %+v", tr)
	}
	if end := terminated(t, evs); end.Reason != "completed" || end.Usage.ToolCalls != 2 {
		t.Errorf("terminated %q with %d tool calls, want completed with 2", end.Reason, end.Usage.ToolCalls)
	}
}

// TestMCPServerStopsOnCtrlC interrupts a run that has the MCP server
// running: the run is cancelled (exit 130, journalled) and takes the server
// with it.
func TestMCPServerStopsOnCtrlC(t *testing.T) {
	t.Parallel()
	server := mcpServer(t)
	dir := fixture(t, "mcp")
	state := filepath.Join(t.TempDir(), "state")
	// Interrupt as soon as the server is up rather than rely on the run's
	// timing.
	p := start(t, call{dir: dir}, "run", "--agent", "librarian", "--state-dir", state, "--var", "server="+server, "--var", "root="+dir, ".", "What is on the shelf?")
	deadline := time.Now().Add(20 * time.Second)
	for len(processesMentioning(dir)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(processesMentioning(dir)) == 0 {
		t.Fatalf("the MCP server never started")
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t)
	assertNoProcess(t, dir)
	switch r.code {
	case 130:
		if runs, _ := journal.ListRuns(state); len(runs) == 1 {
			if end := terminated(t, readJournal(t, state, runs[0].ID)); end.Reason != "cancelled" {
				t.Errorf("terminated %q, want cancelled", end.Reason)
			}
		}
	case 0:
		t.Logf("the run finished before the interrupt arrived")
	default:
		t.Errorf("exit %d after Ctrl-C, want 130\n%s", r.code, r)
	}
}

// assertNoProcess fails when a process whose command line mentions s is
// still running (a zombie has none), allowing a moment for one that is
// already dying.
func assertNoProcess(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		left := processesMentioning(s)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left behind after symbi exited: %s", strings.Join(left, "; "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesMentioning lists "pid: command line" for every process whose
// command line contains s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		cmdline := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if strings.Contains(cmdline, s) && !strings.Contains(cmdline, symbiBin) {
			out = append(out, e.Name()+": "+cmdline)
		}
	}
	return out
}

// TestMCPServerDiesMidRun kills the MCP server between two of the agent's
// calls: the second call must come back as a typed transport failure the
// model sees (its script answers only then), and the run must complete.
func TestMCPServerDiesMidRun(t *testing.T) {
	t.Parallel()
	server := mcpServer(t)
	dir := fixture(t, "mcp")
	state := filepath.Join(t.TempDir(), "state")
	p := start(t, call{dir: dir}, "run", "--agent", "survivor", "--state-dir", state, "--var", "server="+server, "--var", "root="+dir, ".", "What is on the shelf?")

	// Once the first result is journalled the model thinks for 1.5 s:
	// kill the server then.
	deadline := time.Now().Add(hangLimit)
	for {
		runs, _ := journal.ListRuns(state)
		if len(runs) == 1 {
			evs, _ := journal.ReadFile(journal.Path(state, runs[0].ID))
			if len(eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tool result within %v", hangLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	procs := processesMentioning(dir)
	if len(procs) == 0 {
		t.Fatal("the MCP server is not running")
	}
	for _, pr := range procs {
		pid, _, _ := strings.Cut(pr, ":")
		if n, err := strconv.Atoi(pid); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}

	r := p.wait(t)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "The file server is gone." {
		t.Fatalf("want the run to complete with the model's answer to the failure\n%s", r)
	}
	evs := readJournal(t, state, onlyRun(t, state))
	assertGated(t, evs)
	var failed bool
	for _, tr := range eventsOf[journal.ToolResultData](t, evs, journal.ToolResult) {
		if tr.CallID == "call_read" {
			failed = tr.ErrorKind == "transport"
			if !failed {
				t.Errorf("the call to the dead server: %+v, want error_kind transport", tr)
			}
		}
	}
	if !failed {
		t.Errorf("no result for the call to the dead server")
	}
	assertNoProcess(t, dir)
}
