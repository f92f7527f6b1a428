package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestKillAndResume kills `symbi run` with SIGKILL at several points of a
// tool loop (testdata/e2e/resume), resumes each run with `symbi resume`,
// and expects the answer and the journal of an uninterrupted run: the same
// answer on stdout and in the terminated event, one journal with
// consecutive seqs and two started events, every tool call gated. The run
// is held where it is killed (the fake server stalls that model call, or
// the tool call waits for its gate), so the kill lands there however
// loaded the machine is.
func TestKillAndResume(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "resume")
	whole := filepath.Join(t.TempDir(), "state")
	srv, _ := stepServer(t, 0)
	r := symbi(t, call{dir: dir}, "run", "--state-dir", whole, "--var", "base_url="+srv.URL(), ".", "walk")
	if r.code != 0 {
		t.Fatalf("uninterrupted run:\n%s", r)
	}
	want := terminated(t, readJournal(t, whole, onlyRun(t, whole)))
	if want.Answer == "" || strings.TrimSpace(r.stdout) != want.Answer {
		t.Fatalf("uninterrupted run: answer %q, stdout %q", want.Answer, r.stdout)
	}

	points := []struct {
		name  string
		model int    // kill in this model call (1-4), which the server stalls
		tool  int    // or in this tool call (1-3), whose gate stays shut
		torn  bool   // then append half a line, as a power loss could leave
		sync  string // journal_sync
	}{
		{"first model call", 1, 0, false, "background"},
		{"second model call", 2, 0, false, "background"},
		{"second tool call", 0, 2, false, "background"},
		{"third tool call", 0, 3, false, "background"},
		{"after the last tool call", 4, 0, false, "background"},
		{"torn tail", 0, 2, true, "background"},
		{"synced always", 0, 2, false, "always"},
	}
	for _, pt := range points {
		t.Run(strings.ReplaceAll(pt.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			gate := t.TempDir()
			open := func(upTo int) {
				for k := 1; k <= upTo; k++ {
					if err := os.WriteFile(filepath.Join(gate, strconv.Itoa(k)), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Every gate opens when the test ends, so a killed run's waiting
			// tool process ends too.
			t.Cleanup(func() { open(3) })
			if pt.tool > 0 {
				open(pt.tool - 1)
			} else {
				open(3)
			}
			srv, stalled := stepServer(t, pt.model)
			p := start(t, call{dir: dir}, "run", "--state-dir", state, "--var", "journal_sync="+pt.sync,
				"--var", "base_url="+srv.URL(), "--var", "gate="+gate, ".", "walk")
			var id string
			if pt.model > 0 {
				select {
				case <-stalled:
				case <-time.After(hangLimit):
					t.Fatalf("model call %d never reached the server within %v", pt.model, hangLimit)
				}
				id = onlyRun(t, state)
			} else {
				id = waitForEvent(t, state, journal.ToolsDispatched, pt.tool)
			}
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			p.cmd.Wait()
			open(3)
			killed := readJournal(t, state, id)
			for _, ev := range killed {
				if ev.Type == journal.Terminated {
					t.Fatalf("the run finished before the kill: %v", eventTypes(killed))
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
			t.Logf("killed after %s (%d events)", killed[len(killed)-1].Type, len(killed))
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

// waitForEvent polls a state directory until its one run has journalled
// the nth event of type typ, and returns the run id.
func waitForEvent(t *testing.T, state, typ string, nth int) string {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		runs, err := journal.ListRuns(state)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		if len(runs) == 1 {
			evs, _ := journal.ReadFile(journal.Path(state, runs[0].ID))
			n := 0
			for _, ev := range evs {
				if ev.Type == typ {
					n++
				}
			}
			if n >= nth {
				return runs[0].ID
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no run in %s journalled %s #%d within %v", state, typ, nth, hangLimit)
	return ""
}

// stepServer is the model of testdata/e2e/resume: it asks for step 1, then
// for the step after the one the last tool result names, and after step 3
// answers. The first request for model call stallAt (1-4; 0: none) is
// stalled until the client goes away, and stalled closes when it arrives.
func stepServer(t *testing.T, stallAt int) (*fakeserver.Server, <-chan struct{}) {
	stalled := make(chan struct{})
	var once sync.Once
	srv := fakeserver.New(t, fakeserver.WithHandler(func(_ int, req fakeserver.Request) fakeserver.Reply {
		call := 1
		if msgs := req.Chat.Messages; len(msgs) > 0 {
			for k := 3; k >= 1; k-- {
				if strings.Contains(msgs[len(msgs)-1].Content, fmt.Sprintf(`"n":%d`, k)) {
					call = k + 1
					break
				}
			}
		}
		stall := false
		if call == stallAt {
			once.Do(func() { stall = true; close(stalled) })
		}
		switch {
		case stall:
			return fakeserver.Reply{Fault: fakeserver.FaultStallBeforeFirstEvent}
		case call == 4:
			return fakeserver.Text("Three steps ", "taken: 1, 2, 3.")
		}
		return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: fmt.Sprintf("call_%d", call), Name: "step", Arguments: fmt.Sprintf(`{"n":%d}`, call)}}}
	}))
	return srv, stalled
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
