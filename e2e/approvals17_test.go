package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// Issue #17, approvals: a person may approve other arguments than the
// model's (they are checked against the tool's schema and gated again,
// and the model is told), or approve and remember a rule for the run that
// is never wider than shown; and no run hangs or silently denies without
// a terminal: no_approver, approval_timeout and denied_by_approver are
// distinct codes in the journal, the summary and the model's observation.

const approvalsConfig = `
model "m" {
  provider = "scripted"
  script   = "script.json"
}

# write_file: path and content, both strings.
tool "note" {
  description = "Write a note"
  builtin     = "write_file"
}

policy "gate" {
  rules {
    deny = ["note:path=secret*"]
    ask  = ["note"]
  }
}

agent "a" {
  model    = model.m
  tools    = [tool.note]
  policies = [policy.gate]
}
`

// oneNote writes draft.txt, then answers with what it saw.
const oneNote = `{"turns": [
  {"tool_calls": [{"id": "c1", "name": "note", "arguments": {"path": "draft.txt", "content": "the model's"}}]},
  {"content": "done"}
]}`

type approvalRun struct {
	dir, state string
	p          *process
}

// startApprovals starts a run of the fixture without a terminal, with the
// environment and flags given.
func startApprovals(t *testing.T, script string, env []string, flags ...string) *approvalRun {
	t.Helper()
	a := &approvalRun{dir: t.TempDir(), state: filepath.Join(t.TempDir(), "state")}
	writeFile(t, a.dir, "main.hcl", approvalsConfig)
	writeFile(t, a.dir, "script.json", script)
	args := append([]string{"run", "--state-dir", a.state}, flags...)
	a.p = start(t, call{dir: a.dir, env: env}, append(args, ".", "go")...)
	return a
}

func (a *approvalRun) approve(t *testing.T, args ...string) result {
	t.Helper()
	return symbi(t, call{}, append(args, "--state-dir", a.state, "--by", "e2e")...)
}

func (a *approvalRun) exists(name string) bool {
	_, err := os.Stat(filepath.Join(a.dir, name))
	return err == nil
}

// decided is the run's approval_decided events.
func decided(t *testing.T, evs []journal.Event) []journal.ApprovalDecidedData {
	return eventsOf[journal.ApprovalDecidedData](t, evs, journal.ApprovalDecided)
}

// TestApprovalCodes: each way an action a person must decide can end
// without an approval has its code, in the journal, the summary and the
// model's observation; none of them waits without end.
func TestApprovalCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		env   []string
		flags []string
		act   func(t *testing.T, a *approvalRun)
		code  string
	}{
		// Asked nobody, at once: --non-interactive, or CI with no
		// terminal (the default there).
		{"non_interactive", nil, []string{"--non-interactive"}, nil, "no_approver"},
		{"ci", []string{"CI=true"}, nil, nil, "no_approver"},
		// Asked the queue (configured explicitly, even in CI), and
		// nobody answered in time.
		{"timeout", []string{"CI=true"}, []string{"--approver", "queue", "--approval-timeout", "1s"}, nil, "approval_timeout"},
		// A person said no.
		{"denied", nil, nil, func(t *testing.T, a *approvalRun) {
			id := waitForApproval(t, a.state)
			if r := a.approve(t, "deny", id, "--reason", "not today"); r.code != 0 {
				t.Fatalf("deny:\n%s", r)
			}
		}, "denied_by_approver"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startApprovals(t, oneNote, tc.env, tc.flags...)
			if tc.act != nil {
				tc.act(t, a)
			}
			r := a.p.wait(t)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "done" {
				t.Fatalf("run:\n%s", r)
			}
			if a.exists("draft.txt") {
				t.Errorf("the note was written without an approval")
			}
			if tc.code == "no_approver" && r.elapsed > time.Minute {
				t.Errorf("no_approver took %v: it must not wait for anyone", r.elapsed)
			}
			if want := "approvals: 1 " + tc.code; !strings.Contains(r.stderr, want) {
				t.Errorf("the summary does not say %q:\n%s", want, r.stderr)
			}
			evs := readJournal(t, a.state, onlyRun(t, a.state))
			assertGated(t, evs)
			ds := decided(t, evs)
			if len(ds) != 1 || ds[0].Approved || ds[0].Code != tc.code {
				t.Fatalf("approval_decided %+v, want one with code %s", ds, tc.code)
			}
			if !observed(t, evs, "[not approved: "+tc.code+"]") {
				t.Errorf("the model's observation does not carry the code %s", tc.code)
			}
			if tc.code == "no_approver" {
				if m, _ := filepath.Glob(filepath.Join(a.state, "approvals", "*")); len(m) > 0 {
					t.Errorf("a run that asks nobody wrote to the approval queue: %v", m)
				}
			}
			if show := symbi(t, call{}, "runs", "show", "latest", "--state-dir", a.state); !strings.Contains(show.stdout, "approvals: 1 "+tc.code) {
				t.Errorf("runs show does not count it:\n%s", show)
			}
		})
	}
}

// TestApprovalEditedArguments: symbi approve ID --arguments approves the
// person's arguments instead of the model's; the run checks them against
// the tool's schema (refused ones are asked about again, with why) and
// gates them again (a deny there is final); the journal keeps the model's
// arguments, the person's and the final decision; the model is told.
func TestApprovalEditedArguments(t *testing.T) {
	t.Parallel()
	t.Run("approved", func(t *testing.T) {
		t.Parallel()
		a := startApprovals(t, oneNote, nil)
		id := waitForApproval(t, a.state)
		r := a.approve(t, "approve", id, "--arguments", `{"content":"the person's","path":"final.txt"}`)
		if r.code != 0 || !strings.Contains(r.stdout, `path: "final.txt"`) || !strings.Contains(r.stdout, "their digest: sha256:") {
			t.Fatalf("approve --arguments:\n%s", r)
		}
		if r := a.p.wait(t); r.code != 0 || !strings.Contains(r.stderr, "approvals: 1 approved (1 with edited arguments)") {
			t.Fatalf("run:\n%s", r)
		}
		if a.exists("draft.txt") {
			t.Errorf("the model's arguments ran")
		}
		if b, err := os.ReadFile(filepath.Join(a.dir, "final.txt")); err != nil || string(b) != "the person's" {
			t.Fatalf("final.txt: %q %v", b, err)
		}
		evs := readJournal(t, a.state, onlyRun(t, a.state))
		assertGated(t, evs)
		ds := decided(t, evs)
		if len(ds) != 1 || !ds[0].Approved || string(ds[0].Arguments) != `{"content":"the person's","path":"final.txt"}` || !strings.HasPrefix(ds[0].ArgumentsDigest, "sha256:") {
			t.Errorf("approval_decided %+v", ds)
		}
		var rec *journal.GateRecord
		for _, pe := range eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated) {
			for i := range pe.Decisions {
				if pe.Decisions[i].Action.Tool == "note" {
					rec = &pe.Decisions[i]
				}
			}
		}
		if rec == nil || rec.EditedBy != "e2e" || !strings.Contains(string(rec.ModelArguments), "draft.txt") || !strings.Contains(string(rec.Action.Arguments), "final.txt") || rec.Decision.Outcome != "allow" {
			t.Fatalf("the gate record does not keep the model's arguments, the person's and the decision: %+v", rec)
		}
		asks := 0
		for _, d := range rec.Trail {
			if d.Outcome == "ask" {
				asks++
			}
		}
		if asks != 2 {
			t.Errorf("trail %+v: want the ask on the model's arguments and the ask on the person's (gated again)", rec.Trail)
		}
		dispatched := eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched)
		if len(dispatched) != 1 || !strings.Contains(string(dispatched[0].Calls[0].Arguments), "final.txt") {
			t.Errorf("dispatched %+v", dispatched)
		}
		if !observed(t, evs, `[ran with arguments edited by e2e: {"content":"the person's","path":"final.txt"}]`) {
			t.Errorf("the model is not told its call ran with edited arguments: %s", eventsOf[json.RawMessage](t, evs, journal.ObservationsCollected))
		}
	})

	t.Run("denied_when_gated_again", func(t *testing.T) {
		t.Parallel()
		a := startApprovals(t, oneNote, nil)
		id := waitForApproval(t, a.state)
		if r := a.approve(t, "approve", id, "--arguments", `{"path":"secret.txt","content":"x"}`); r.code != 0 {
			t.Fatalf("approve:\n%s", r)
		}
		r := a.p.wait(t)
		if r.code != 0 || a.exists("secret.txt") || a.exists("draft.txt") {
			t.Fatalf("an approval of arguments a policy denies ran them:\n%s", r)
		}
		evs := readJournal(t, a.state, onlyRun(t, a.state))
		if !observed(t, evs, `[policy denied] the arguments e2e approved were denied: tool_call "note" matches deny rule "note:path=secret*"`) {
			t.Errorf("the deny of the edited arguments is not what the model is told:\n%s", r)
		}
	})

	t.Run("schema_refused_then_asked_again", func(t *testing.T) {
		t.Parallel()
		a := startApprovals(t, oneNote, nil)
		first := waitForApproval(t, a.state)
		if r := a.approve(t, "approve", first, "--arguments", `{"path":3}`); r.code != 0 {
			t.Fatalf("approve:\n%s", r)
		}
		// The run asks again, saying why; this time the model's arguments.
		var second string
		for deadline := time.Now().Add(hangLimit); second == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if id := waitForApproval(t, a.state); id != first {
				second = id
			}
		}
		list := a.approve(t, "approve")
		if !strings.Contains(list.stdout, "the arguments e2e approved were refused") || !strings.Contains(list.stdout, `want "string"`) {
			t.Errorf("the second request does not say why the first edit was refused:\n%s", list)
		}
		if r := a.approve(t, "approve", second); r.code != 0 {
			t.Fatalf("approve:\n%s", r)
		}
		if r := a.p.wait(t); r.code != 0 || !a.exists("draft.txt") {
			t.Fatalf("run:\n%s", r)
		}
	})

	// The proof covers the edited arguments: a decision whose arguments
	// were changed after symbi approve signed it is refused.
	t.Run("signed", func(t *testing.T) {
		t.Parallel()
		a := startApprovals(t, oneNote, []string{}, "--approval-timeout", "20s")
		id := waitForApproval(t, a.state)
		// Written aside, edited, then put in place as a forger would.
		aside := filepath.Join(t.TempDir(), "state")
		copyTree(t, a.state, aside)
		if r := symbi(t, call{}, "approve", id, "--state-dir", aside, "--by", "e2e", "--arguments", `{"path":"ok.txt","content":"fine"}`); r.code != 0 {
			t.Fatalf("approve:\n%s", r)
		}
		b, err := os.ReadFile(filepath.Join(aside, "approvals", id+".decision.json"))
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		json.Unmarshal(b, &d)
		d["arguments"] = map[string]any{"path": "evil.txt", "content": "fine"}
		forged, _ := json.Marshal(d)
		writeAtomic(t, filepath.Join(a.state, "approvals", id+".decision.json"), forged)
		rej := decodeEvent[rejectedEvent](t, (&hostileRun{state: a.state}).waitEvents(t, approvalRejected, 1, untilRun)[0])
		if !strings.Contains(rej.Reason, "bad proof") {
			t.Errorf("approval_rejected %+v, want a bad proof", rej)
		}
		if r := a.approve(t, "deny", id); r.code != 0 {
			t.Fatalf("deny:\n%s", r)
		}
		a.p.wait(t)
		if a.exists("evil.txt") || a.exists("ok.txt") {
			t.Errorf("a forged edit ran")
		}
	})
}

// threeNotes writes two notes under notes/ and one elsewhere.
const threeNotes = `{"turns": [
  {"tool_calls": [{"id": "c1", "name": "note", "arguments": {"path": "notes/a.txt", "content": "a"}}]},
  {"tool_calls": [{"id": "c2", "name": "note", "arguments": {"path": "notes/b.txt", "content": "b"}}]},
  {"tool_calls": [{"id": "c3", "name": "note", "arguments": {"path": "elsewhere.txt", "content": "c"}}]},
  {"content": "done"}
]}`

// TestApprovalRemembered: approve and remember, with one argument widened
// to a glob: the rule as shown is journalled; the next call it covers is
// approved by it without asking; a call it does not cover is asked about.
func TestApprovalRemembered(t *testing.T) {
	t.Parallel()
	a := startApprovals(t, threeNotes, nil)
	id := waitForApproval(t, a.state)
	r := a.approve(t, "approve", id, "--remember", "--widen", "path=notes/*", "--widen", "content=*")
	if r.code != 0 || !strings.Contains(r.stdout, `remembered for the rest of the run: note with content ~ "*", path ~ "notes/*", for the rest of the run`) {
		t.Fatalf("approve --remember:\n%s", r)
	}
	// The third call is outside the rule: asked again, denied.
	var third string
	for deadline := time.Now().Add(hangLimit); third == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if next := waitForApproval(t, a.state); next != id {
			third = next
		}
	}
	list := a.approve(t, "approve")
	if !strings.Contains(list.stdout, `path: "elsewhere.txt"`) {
		t.Errorf("the call outside the rule is not the one asked about:\n%s", list)
	}
	if r := a.approve(t, "deny", third); r.code != 0 {
		t.Fatalf("deny:\n%s", r)
	}
	res := a.p.wait(t)
	if res.code != 0 || !a.exists("notes/a.txt") || !a.exists("notes/b.txt") || a.exists("elsewhere.txt") {
		t.Fatalf("run:\n%s", res)
	}
	if !strings.Contains(res.stderr, "approvals: 2 approved (1 by a remembered rule), 1 denied_by_approver") {
		t.Errorf("the summary does not count the remembered approval:\n%s", res.stderr)
	}
	evs := readJournal(t, a.state, onlyRun(t, a.state))
	assertGated(t, evs)
	rem := eventsOf[journal.ApprovalRememberedData](t, evs, journal.ApprovalRemembered)
	if len(rem) != 1 || rem[0].By != "e2e" || rem[0].Standing.Tool != "note" || len(rem[0].Standing.Arguments) != 2 {
		t.Fatalf("approval_remembered %+v", rem)
	}
	ds := decided(t, evs)
	if len(ds) != 3 || ds[1].Via != "standing" || !ds[1].Approved || ds[1].Rule == "" || ds[2].Code != "denied_by_approver" {
		t.Errorf("approval_decided %+v: want the person's, the rule's, then a no", ds)
	}
	if n := len(eventsOf[journal.ApprovalRequestedData](t, evs, journal.ApprovalRequested)); n != 2 {
		t.Errorf("%d approval requests, want 2: the call the rule covers is not asked about", n)
	}

	// A rule is never wider than the arguments shown: one that names an
	// argument the call does not have is refused before anything is signed.
	b := startApprovals(t, oneNote, nil)
	id = waitForApproval(t, b.state)
	if r := b.approve(t, "approve", id, "--remember", "--widen", "mode=*"); r.code != 2 || !strings.Contains(r.stderr, `no argument "mode" to widen`) {
		t.Errorf("a rule over an argument not shown:\n%s", r)
	}
	b.approve(t, "deny", id)
	b.p.wait(t)
}

// TestApprovalEditAtTheREPL: the REPL's approver offers "e": the person
// types the arguments, confirms them, and the call runs with them, gated
// again; the same through a run the REPL starts.
func TestApprovalEditAtTheREPL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.hcl", approvalsConfig)
	writeFile(t, dir, "script.json", oneNote)
	in := strings.Join([]string{
		`:call note {path = "draft.txt", content = "typed"}`,
		"e",
		`{"path": "edited.txt", "content": "edited at the REPL"}`,
		"y",
		":run a go",
		"e",
		`{"path": "secret.txt", "content": "x"}`,
		"y",
	}, "\n") + "\n"
	r := symbi(t, call{dir: dir, stdin: in}, "repl", ".")
	if r.code != 0 {
		t.Fatalf("repl:\n%s", r)
	}
	for _, want := range []string{
		"e edit the arguments",
		`  edited arguments:`,
		`    path: "edited.txt"`,
		"(the edited arguments, gated again)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the REPL does not show %q:\n%s", want, r.stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "edited.txt")); err != nil || string(b) != "edited at the REPL" {
		t.Errorf("edited.txt: %q %v\n%s", b, err, r)
	}
	if _, err := os.Stat(filepath.Join(dir, "draft.txt")); err == nil {
		t.Errorf("the typed arguments ran instead of the edited ones")
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.txt")); err == nil {
		t.Errorf("an edit the policies deny ran in the REPL's run")
	}
}
