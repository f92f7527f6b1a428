package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// Issue #11, items 3 and 4: a run's journal is locked while a process
// writes it, and it is tamper-evident. Each test drives the real binary
// over a configuration whose "hold" tool waits until the test releases it,
// so the test, not the clock, decides when the run moves on.

// holdHCL is an agent that records one write, then waits in "hold" until
// the release file exists. A "forbidden" tool is denied by its policy.
const holdHCL = `
variable "count" {
  type = string
}
variable "waitdir" {
  type = string
}
variable "release" {
  type = string
}
variable "forbidden" {
  type = string
}

model "m" {
  provider = "scripted"
  script   = "script.json"
}

tool "record" {
  description = "Records one write"
  parameters = {
    type       = "object"
    properties = { note = { type = "string" } }
  }
  command {
    argv = ["sh", "-c", "cat >/dev/null; echo x >>\"$COUNT\"; echo recorded"]
    env  = { COUNT = var.count }
  }
  effect = "write"
}

tool "hold" {
  description = "Waits until the test releases it"
  parameters = {
    type       = "object"
    properties = {}
  }
  command {
    argv = ["sh", "-c", "cat >/dev/null; touch \"$WAITDIR/$$\"; while [ ! -e \"$RELEASE\" ]; do sleep 0.02; done; echo released"]
    env  = { WAITDIR = var.waitdir, RELEASE = var.release }
  }
  effect  = "read"
  timeout = "600s"
}

tool "forbidden" {
  description = "Must never run"
  parameters = {
    type       = "object"
    properties = {}
  }
  command {
    argv = ["sh", "-c", "cat >/dev/null; echo ran >\"$FORBIDDEN\"; echo ran"]
    env  = { FORBIDDEN = var.forbidden }
  }
  effect = "write"
}

tool "read" {
  builtin = "read_file"
}

policy "rules" {
  rules {
    deny  = ["forbidden"]
    allow = ["record", "hold", "read"]
  }
}

budget "b" {
  max_iterations = 8
  timeout        = "600s"
}

agent "a" {
  model    = model.m
  tools    = [tool.record, tool.hold, tool.forbidden, tool.read]
  policies = [policy.rules]
  budget   = budget.b
  loop {
    mode         = "react"
    tool_timeout = "600s"
  }
}
`

// holdScript records, holds, then tries the forbidden tool; a denial ends
// the run with "done".
const holdScript = `{"turns":[
 {"when":"^go$","tool_calls":[{"id":"c1","name":"record","arguments":{"note":"once"}}]},
 {"when":"^recorded","tool_calls":[{"id":"c2","name":"hold","arguments":{}}]},
 {"when":"^released","tool_calls":[{"id":"c3","name":"forbidden","arguments":{}}]},
 {"when":"denied","content":"done"},
 {"when":"^ran","content":"the forbidden tool ran"}
],"on_exhausted":"error"}`

// passwdScript is holdScript, but once released the model reads
// etc/passwd: inside the workspace only if the workspace were /.
const passwdScript = `{"turns":[
 {"when":"^go$","tool_calls":[{"id":"c1","name":"record","arguments":{"note":"once"}}]},
 {"when":"^recorded","tool_calls":[{"id":"c2","name":"hold","arguments":{}}]},
 {"when":"^released","tool_calls":[{"id":"c3","name":"read","arguments":{"path":"etc/passwd"}}]},
 {"content":"read"}
],"on_exhausted":"error"}`

// holdRun is one configuration and the files its tools touch.
type holdRun struct {
	dir, state                         string
	count, waitdir, release, forbidden string
}

func newHoldRun(t *testing.T, script string) *holdRun {
	t.Helper()
	tmp := t.TempDir()
	h := &holdRun{
		dir:       filepath.Join(tmp, "cfg"),
		state:     filepath.Join(tmp, "state"),
		count:     filepath.Join(tmp, "count"),
		waitdir:   filepath.Join(tmp, "waiting"),
		release:   filepath.Join(tmp, "release"),
		forbidden: filepath.Join(tmp, "forbidden"),
	}
	writeFile(t, h.dir, "main.hcl", holdHCL)
	writeFile(t, h.dir, "script.json", script)
	if err := os.MkdirAll(h.waitdir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A hold left waiting (by a killed run whose tool outlived it) ends
	// with the test.
	t.Cleanup(func() { os.WriteFile(h.release, nil, 0o644) })
	return h
}

// run starts `symbi run` on the configuration.
func (h *holdRun) run(t *testing.T) *process {
	t.Helper()
	return start(t, call{dir: h.dir}, "run", "--state-dir", h.state,
		"--var", "count="+h.count, "--var", "waitdir="+h.waitdir, "--var", "release="+h.release, "--var", "forbidden="+h.forbidden,
		".", "go")
}

// waiting returns the pids of the hold calls that have started.
func (h *holdRun) waiting(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(h.waitdir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// awaitHold waits until more than n hold calls have started.
func (h *holdRun) awaitHold(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for len(h.waiting(t)) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("no hold call started within %v", hangLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killWhileHolding runs until the hold tool waits, kills symbi with
// SIGKILL and returns the run id.
func (h *holdRun) killWhileHolding(t *testing.T) string {
	t.Helper()
	p := h.run(t)
	h.awaitHold(t, 0)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	return onlyRun(t, h.state)
}

// writes is how many times the record tool ran.
func (h *holdRun) writes(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(h.count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// exited delivers a process's result once it ends, waiting off the test's
// goroutine (a result, unlike process.wait, never fails the test). Its
// cleanup, which runs before start's, stops the process and waits for that
// goroutine: two Waits at once on one exec.Cmd can hang.
func exited(t *testing.T, p *process) <-chan result {
	ch := make(chan result, 1)
	waited := make(chan struct{})
	t.Cleanup(func() {
		p.cancel()
		<-waited
	})
	go func() {
		defer close(waited)
		err := p.cmd.Wait()
		r := result{stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.started), code: -1}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err == nil {
			r.code = 0
		}
		ch <- r
	}()
	return ch
}

func startedEvents(t *testing.T, state, id string) int {
	t.Helper()
	evs, _ := journal.ReadFile(journal.Path(state, id))
	n := 0
	for _, ev := range evs {
		if ev.Type == journal.Started {
			n++
		}
	}
	return n
}

// TestHostileResumeWhileRunning: `symbi resume` of a run that another
// process is still running is refused (exit 2) and changes nothing; the
// run then finishes with its write done once and a journal that verifies.
// Before the run lock, the resume ran the run a second time and the
// journal became unreadable.
func TestHostileResumeWhileRunning(t *testing.T) {
	t.Parallel()
	h := newHoldRun(t, holdScript)
	run := h.run(t)
	h.awaitHold(t, 0)
	id := onlyRun(t, h.state)

	ls := symbi(t, call{}, "runs", "--state-dir", h.state)
	if !strings.Contains(ls.stdout, id) || !strings.Contains(ls.stdout, " running ") {
		t.Errorf("symbi runs does not list the live run as running:\n%s", ls)
	}

	resume := start(t, call{}, "resume", "--state-dir", h.state, id)
	done := exited(t, resume)
	var r result
	for waiting := true; waiting; {
		select {
		case r = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			if startedEvents(t, h.state, id) > 1 || len(h.waiting(t)) > 1 {
				t.Fatalf("symbi resume went on with a run another process is running:\n%s", resume.stderr.String())
			}
		}
	}
	if r.code != 2 || !strings.Contains(r.stderr, "in use by another symbi process") || !strings.Contains(r.stderr, id) {
		t.Errorf("symbi resume of a running run: want exit 2 saying the run is in use\n%s", r)
	}

	os.WriteFile(h.release, nil, 0o644)
	fin := run.wait(t)
	if fin.code != 0 || strings.TrimSpace(fin.stdout) != "done" {
		t.Fatalf("the run, once released:\n%s", fin)
	}
	if n := h.writes(t); n != 1 {
		t.Errorf("the write tool ran %d times, want once", n)
	}
	evs := readJournal(t, h.state, id)
	if n := startedEvents(t, h.state, id); n != 1 {
		t.Errorf("%d started events, want the run's own only: %v", n, eventTypes(evs))
	}
	if v := symbi(t, call{}, "runs", "verify", "--state-dir", h.state, id); v.code != 0 || !strings.Contains(v.stdout, "intact") {
		t.Errorf("symbi runs verify of the finished run:\n%s", v)
	}
	if ls := symbi(t, call{}, "runs", "--state-dir", h.state); !strings.Contains(ls.stdout, "completed") {
		t.Errorf("symbi runs after the run:\n%s", ls)
	}
}

// TestHostileConcurrentResumes: of two resumes of one killed run started
// together, exactly one proceeds; the other is refused with exit 2 while
// the first holds the run, which `symbi runs` shows as running.
func TestHostileConcurrentResumes(t *testing.T) {
	t.Parallel()
	h := newHoldRun(t, holdScript)
	id := h.killWhileHolding(t)
	before := len(h.waiting(t))

	a := start(t, call{}, "resume", "--state-dir", h.state, id)
	b := start(t, call{}, "resume", "--state-dir", h.state, id)
	doneA, doneB := exited(t, a), exited(t, b)
	var loser result
	var winner <-chan result
	var winnerProc *process
	for winner == nil {
		select {
		case loser = <-doneA:
			winner, winnerProc = doneB, b
		case loser = <-doneB:
			winner, winnerProc = doneA, a
		case <-time.After(20 * time.Millisecond):
			if len(h.waiting(t)) >= before+2 {
				t.Fatalf("both resumes went on with the run:\n--- first\n%s\n--- second\n%s", a.stderr.String(), b.stderr.String())
			}
		}
	}
	if loser.code != 2 || !strings.Contains(loser.stderr, "in use by another symbi process") {
		t.Errorf("the resume that lost: want exit 2 saying the run is in use\n%s", loser)
	}
	// The winner holds the run while its hold waits.
	h.awaitHold(t, before)
	if ls := symbi(t, call{}, "runs", "--state-dir", h.state); !strings.Contains(ls.stdout, " running ") {
		t.Errorf("symbi runs does not list the resumed run as running:\n%s", ls)
	}
	os.WriteFile(h.release, nil, 0o644)
	var r result
	select {
	case r = <-winner:
	case <-time.After(hangLimit):
		winnerProc.cmd.Process.Kill()
		t.Fatalf("the resume that won did not finish within %v", hangLimit)
	}
	if r.code != 0 || strings.TrimSpace(r.stdout) != "done" {
		t.Fatalf("the resume that won:\n%s", r)
	}
	if n := h.writes(t); n != 1 {
		t.Errorf("the write tool ran %d times, want once", n)
	}
	if n := startedEvents(t, h.state, id); n != 2 {
		t.Errorf("%d started events, want the run's and one resume's", n)
	}
	if v := symbi(t, call{}, "runs", "verify", "--state-dir", h.state, id); v.code != 0 {
		t.Errorf("symbi runs verify:\n%s", v)
	}
}

// TestHostileResumeOfEditedPlan: a plan.json changed after the kill (its
// policy now allows the forbidden tool) is refused, naming the file, and
// the forbidden tool never runs.
func TestHostileResumeOfEditedPlan(t *testing.T) {
	t.Parallel()
	h := newHoldRun(t, holdScript)
	id := h.killWhileHolding(t)
	os.WriteFile(h.release, nil, 0o644)

	path := filepath.Join(journal.RunDir(h.state, id), journal.PlanFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	edited := false
	for _, pol := range p["policies"].([]any) {
		rules, _ := pol.(map[string]any)["rules"].(map[string]any)
		if rules != nil {
			rules["deny"] = []any{}
			rules["allow"] = append(rules["allow"].([]any), "forbidden")
			edited = true
		}
	}
	if !edited {
		t.Fatalf("no rules policy in %s", path)
	}
	b, _ = json.MarshalIndent(p, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}

	r := symbi(t, call{}, "resume", "--state-dir", h.state, id)
	if r.code != 2 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "changed after the run started") {
		t.Errorf("resume of an edited plan: want exit 2 naming %s\n%s", path, r)
	}
	if _, err := os.Stat(h.forbidden); err == nil {
		t.Error("the forbidden tool ran")
	}
	v := symbi(t, call{}, "runs", "verify", "--state-dir", h.state, id)
	if v.code != 1 || !strings.Contains(v.stderr, "plan") {
		t.Errorf("symbi runs verify of an edited plan: want exit 1\n%s", v)
	}
}

// TestHostileResumeOfEditedBaseDir: setting the started line's base_dir to
// / (which would make the workspace / and let read_file reach etc/passwd)
// breaks the chain at line 1: resume refuses, and runs verify names the
// line.
func TestHostileResumeOfEditedBaseDir(t *testing.T) {
	t.Parallel()
	h := newHoldRun(t, passwdScript)
	id := h.killWhileHolding(t)
	os.WriteFile(h.release, nil, 0o644)

	path := journal.Path(h.state, id)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dirJSON, _ := json.Marshal(h.dir)
	tampered := strings.Replace(string(b), `"base_dir":`+string(dirJSON), `"base_dir":"/"`, 1)
	if tampered == string(b) {
		t.Fatalf("no base_dir %s in the started line:\n%s", dirJSON, b)
	}
	if err := os.WriteFile(path, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}

	r := symbi(t, call{}, "resume", "--state-dir", h.state, id)
	if r.code != 2 || !strings.Contains(r.stderr, "journal line 1") {
		t.Errorf("resume of a journal whose base_dir was edited: want exit 2 naming line 1\n%s", r)
	}
	for _, ev := range readJournal(t, h.state, id) {
		if ev.Type == journal.ToolResult && strings.Contains(string(ev.Data), "root:") {
			t.Errorf("read_file reached /etc/passwd: %s", ev.Data)
		}
	}
	v := symbi(t, call{}, "runs", "verify", "--state-dir", h.state, id)
	if v.code != 1 || !strings.Contains(v.stderr, "journal line 1") || !strings.Contains(v.stderr, "MAC does not match") {
		t.Errorf("symbi runs verify: want exit 1 naming line 1\n%s", v)
	}
	if show := symbi(t, call{}, "runs", "show", "--state-dir", h.state, id); show.code != 1 || !strings.Contains(show.stderr, "journal line 1") {
		t.Errorf("symbi runs show: want exit 1 naming line 1\n%s", show)
	}
	if ls := symbi(t, call{}, "runs", "--state-dir", h.state); !strings.Contains(ls.stdout, "tampered") {
		t.Errorf("symbi runs does not list the run as tampered:\n%s", ls)
	}
}

// TestHostileJournalEdits: an edited middle line, a deleted middle line, a
// reordered pair and a journal stripped of its MACs are each caught by runs
// verify (exit 1, the first bad line), runs show and resume (exit 2).
func TestHostileJournalEdits(t *testing.T) {
	t.Parallel()
	h := newHoldRun(t, holdScript)
	id := h.killWhileHolding(t)
	os.WriteFile(h.release, nil, 0o644)
	if v := symbi(t, call{}, "runs", "verify", "--state-dir", h.state, id); v.code != 0 {
		t.Errorf("symbi runs verify of the killed run:\n%s", v)
	}
	b, err := os.ReadFile(journal.Path(h.state, id))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 5 {
		t.Fatalf("only %d lines before the kill", len(lines))
	}
	edited := append([]string(nil), lines...)
	edited[2] = strings.Replace(edited[2], `"ts":"2`, `"ts":"3`, 1) // still valid JSON and a valid time
	deleted := append(append([]string(nil), lines[:2]...), lines[3:]...)
	reordered := append([]string(nil), lines...)
	reordered[2], reordered[3] = reordered[3], reordered[2]
	var stripped []string
	for _, l := range lines {
		if i := strings.LastIndex(l, `,"mac":"`); i >= 0 {
			l = l[:i] + "}\n"
		}
		stripped = append(stripped, l)
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  string // what verify says
	}{
		{"edited middle line", edited, "journal line 3: the MAC does not match"},
		{"deleted middle line", deleted, "journal line 3: the MAC does not match"},
		{"reordered pair", reordered, "journal line 3: the MAC does not match"},
		{"stripped of its MACs", stripped, "journal line 1: the journal is unsigned"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			// A copy of the state directory (its key and the run) per case.
			state := filepath.Join(t.TempDir(), "state")
			copyTree(t, h.state, state)
			if err := os.WriteFile(journal.Path(state, id), []byte(strings.Join(tc.lines, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			v := symbi(t, call{}, "runs", "verify", "--state-dir", state, id)
			if v.code != 1 || !strings.Contains(v.stderr, tc.want) {
				t.Errorf("symbi runs verify: want exit 1 and %q\n%s", tc.want, v)
			}
			show := symbi(t, call{}, "runs", "show", "--state-dir", state, id)
			if tc.name == "stripped of its MACs" {
				if show.code != 0 || !strings.Contains(show.stderr, "unsigned") {
					t.Errorf("symbi runs show of an unsigned journal: want it shown with a warning\n%s", show)
				}
			} else if show.code != 1 || !strings.Contains(show.stderr, "journal line 3") {
				t.Errorf("symbi runs show: want exit 1 naming line 3\n%s", show)
			}
			r := symbi(t, call{}, "resume", "--state-dir", state, id)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("symbi resume: want exit 2 and %q\n%s", tc.want, r)
			}
			if n := h.writes(t); n != 1 {
				t.Errorf("the write tool ran %d times, want once", n)
			}
		})
	}
}
