package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// TestKillAndResume kills `symbi run` with SIGKILL at several points of a
// slow tool loop (testdata/e2e/resume), resumes each run with `symbi
// resume`, and expects the answer and the journal of an uninterrupted run:
// the same answer on stdout and in the terminated event, one journal with
// consecutive seqs and two started events, every tool call gated.
func TestKillAndResume(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "resume")
	whole := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{dir: dir}, "run", "--state-dir", whole, ".", "walk")
	if r.code != 0 {
		t.Fatalf("uninterrupted run:\n%s", r)
	}
	want := terminated(t, readJournal(t, whole, onlyRun(t, whole)))
	if want.Answer == "" || strings.TrimSpace(r.stdout) != want.Answer {
		t.Fatalf("uninterrupted run: answer %q, stdout %q", want.Answer, r.stdout)
	}

	// Kill once the journal has this many events: the process is then in
	// the middle of something slow.
	points := []struct {
		name   string
		events int
		torn   bool   // then append half a line, as a power loss could leave
		sync   string // journal_sync
	}{
		{"first model call", 2, false, "background"},          // model_call_started 1
		{"second model call", 8, false, "background"},         // iteration 1 observed, model_call_started 2
		{"second tool call", 11, false, "background"},         // iteration 2 dispatched
		{"third tool call", 17, false, "background"},          // iteration 3 dispatched
		{"after the last tool call", 20, false, "background"}, // iteration 3 observed, model_call_started 4
		{"torn tail", 11, true, "background"},
		{"synced always", 11, false, "always"},
	}
	for _, pt := range points {
		t.Run(strings.ReplaceAll(pt.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			p := start(t, call{dir: dir}, "run", "--state-dir", state, "--var", "journal_sync="+pt.sync, ".", "walk")
			id, before := waitForEvents(t, state, pt.events)
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			p.cmd.Wait()
			killed := readJournal(t, state, id)
			for _, ev := range killed {
				if ev.Type == journal.Terminated {
					t.Fatalf("the run finished before the kill (the machine is too slow for the kill points?): %v", eventTypes(killed))
				}
			}
			if pt.torn {
				f, err := os.OpenFile(journal.Path(state, id), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(`{"seq":` + strconv.Itoa(len(killed)+1) + `,"ts":"2026-12-02T14:00:00Z","run":"` + id + `","agent":"agent.walker","iteration":2,"event":"tool_res`)
				f.Close()
			}
			t.Logf("killed after %s (%d events; %d when polled)", killed[len(killed)-1].Type, len(killed), before)

			ls := symbi(t, call{}, "runs", "--state-dir", state)
			if !strings.Contains(ls.stdout, "incomplete") {
				t.Errorf("symbi runs does not show the killed run as incomplete:\n%s", ls)
			}
			if show := symbi(t, call{}, "runs", "show", "--state-dir", state, id); show.code != 0 || !strings.Contains(show.stdout, "started") {
				t.Errorf("symbi runs show of the killed run:\n%s", show)
			}

			r := symbi(t, call{dir: t.TempDir()}, "resume", "--state-dir", state, id)
			if r.code != 0 {
				t.Fatalf("symbi resume:\n%s", r)
			}
			if got := strings.TrimSpace(r.stdout); got != want.Answer {
				t.Errorf("resumed answer %q, uninterrupted %q", got, want.Answer)
			}
			evs := readJournal(t, state, id)
			assertGated(t, evs)
			end := terminated(t, evs)
			if end.Reason != "completed" || end.Answer != want.Answer {
				t.Errorf("terminated %q with answer %q; want completed with %q", end.Reason, end.Answer, want.Answer)
			}
			if len(evs) <= len(killed) || evs[len(killed)].Type != journal.Started {
				t.Errorf("the resumed attempt does not continue the journal with a started event: %v", eventTypes(evs))
			}
			var resumed journal.StartedData
			if err := evs[len(killed)].Decode(&resumed); err != nil || resumed.Resume != killed[len(killed)-1].Seq {
				t.Errorf("the resumed started event says resume_after_seq %d (%v), want %d", resumed.Resume, err, killed[len(killed)-1].Seq)
			}
			if end.Iterations != want.Iterations {
				t.Errorf("%d iterations in all, uninterrupted %d", end.Iterations, want.Iterations)
			}
			if end.Usage.ModelCalls > want.Usage.ModelCalls+1 {
				t.Errorf("%d model calls over both attempts; uninterrupted %d, and at most one may be redone", end.Usage.ModelCalls, want.Usage.ModelCalls)
			}

			// A finished run cannot be resumed again.
			if again := symbi(t, call{}, "resume", "--state-dir", state, id); again.code == 0 {
				t.Errorf("a finished run resumed again:\n%s", again)
			}
		})
	}
}

// waitForEvents polls a state directory until its one run has journalled
// at least n events, and returns the run id and the count it saw.
func waitForEvents(t *testing.T, state string, n int) (string, int) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		runs, err := journal.ListRuns(state)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if len(runs) == 1 {
			evs, _ := journal.ReadFile(journal.Path(state, runs[0].ID))
			if len(evs) >= n {
				return runs[0].ID, len(evs)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no run in %s reached %d events within %v", state, n, hangLimit)
	return "", 0
}

// TestKillDuringApprovalAndResume kills a run while it waits for a person
// to approve a tool call, resumes it, and approves: the call runs once, and
// the person is shown only the request the resumed run waits for (the killed
// attempt's request is nobody's to answer any more).
func TestKillDuringApprovalAndResume(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "gate")
	state := filepath.Join(t.TempDir(), "state")
	marker := filepath.Join(t.TempDir(), "marker")
	p := start(t, call{dir: dir}, "run", "--agent", "asked", "--state-dir", state, "--var", "marker="+marker, ".", "go")
	first := waitForApproval(t, state)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	id := onlyRun(t, state)

	resumed := start(t, call{dir: t.TempDir()}, "resume", "--state-dir", state, id)
	var pending []string
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		pending, _ = filepath.Glob(filepath.Join(state, "approvals", "*.request.json"))
		if len(pending) > 1 || (len(pending) == 1 && !strings.Contains(pending[0], first)) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var waiting string
	for _, f := range pending {
		if rid := strings.TrimSuffix(filepath.Base(f), ".request.json"); rid != first {
			waiting = rid
		}
	}
	if waiting == "" {
		t.Fatalf("the resumed run asked nothing new; pending: %v", pending)
	}
	if len(pending) != 1 {
		t.Errorf("%d approval requests pending after the resume, want only the one the resumed run waits for; the killed attempt's %s is still listed", len(pending), first)
	}
	if r := symbi(t, call{}, "approve", "--state-dir", state, "--by", "e2e", waiting); r.code != 0 {
		t.Fatalf("symbi approve:\n%s", r)
	}
	r := resumed.wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "The marker is written.") {
		t.Fatalf("symbi resume:\n%s", r)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the approved call did not run: %v", err)
	}
	assertGated(t, readJournal(t, state, id))
}
