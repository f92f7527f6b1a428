package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// TestGateBeforeExecutor proposes a call of a command tool that writes a
// marker file, under every kind of gate: the marker exists only when a
// policy allowed the call, and a denied call leaves its decision and a
// "[policy denied]" observation in the journal while the run goes on.
func TestGateBeforeExecutor(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "gate")
	cases := []struct {
		agent  string
		engine string // the engine whose deny the journal must show
		reason string // part of the deny reason
	}{
		{"rules_denied", "rules", `matches deny rule "touch"`},
		{"opa_denied", "opa", "e2e: opa forbids touch"},
		{"cedar_denied", "cedar", "e2e: cedar forbids touch"},
		{"chain_denied", "opa", "e2e: opa forbids touch"},
		{"unaddressed", "", "on_no_policy"},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			marker := filepath.Join(t.TempDir(), "marker")
			r := symbi(t, call{dir: dir}, "run", "--agent", tc.agent, "--state-dir", state, "--var", "marker="+marker, ".", "go")
			if r.code != 0 {
				t.Fatalf("a denied tool call should not end the run:\n%s", r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the denied tool ran: %s exists", marker)
			}
			if !strings.Contains(r.stdout, "The call was denied.") {
				t.Errorf("the model did not see the denial; stdout:\n%s", r.stdout)
			}
			evs := readJournal(t, state, onlyRun(t, state))
			assertGated(t, evs)
			var denied *journal.GateRecord
			for _, pe := range eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated) {
				for _, d := range pe.Decisions {
					if d.Action.Tool == "touch" {
						denied = &d
					}
				}
			}
			switch {
			case denied == nil:
				t.Fatalf("no gate decision for the touch call in the journal: %v", eventTypes(evs))
			case denied.Decision.Outcome != "deny":
				t.Errorf("touch: decision %q, want deny", denied.Decision.Outcome)
			case !strings.Contains(denied.Decision.Reason, tc.reason):
				t.Errorf("touch: deny reason %q, want it to mention %q", denied.Decision.Reason, tc.reason)
			case tc.engine != "" && !trailHas(denied, tc.engine, "deny"):
				t.Errorf("touch: no %s deny in the trail %+v", tc.engine, denied.Trail)
			}
			if n := len(eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched)); n != 0 {
				t.Errorf("%d tools_dispatched events for a denied call", n)
			}
			if !observed(t, evs, "[policy denied] ") {
				t.Errorf("no \"[policy denied]\" observation in the journal")
			}
			if d := terminated(t, evs); d.Reason != "completed" {
				t.Errorf("terminated %q, want completed", d.Reason)
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(t.TempDir(), "state")
		marker := filepath.Join(t.TempDir(), "marker")
		r := symbi(t, call{dir: dir}, "run", "--agent", "allowed", "--state-dir", state, "--var", "marker="+marker, ".", "go")
		if r.code != 0 {
			t.Fatalf("run:\n%s", r)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the allowed tool did not run: %v\n%s", err, r)
		}
		evs := readJournal(t, state, onlyRun(t, state))
		assertGated(t, evs)
		if n := len(eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched)); n != 1 {
			t.Errorf("%d tools_dispatched events, want 1", n)
		}
	})

	t.Run("invalid_arguments", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(t.TempDir(), "state")
		marker := filepath.Join(t.TempDir(), "marker")
		r := symbi(t, call{dir: dir}, "run", "--agent", "invalid_arguments", "--state-dir", state, "--var", "marker="+marker, ".", "go")
		if r.code != 0 || !strings.Contains(r.stdout, "The call was refused.") {
			t.Fatalf("run:\n%s", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("a call whose arguments break the schema ran")
		}
		evs := readJournal(t, state, onlyRun(t, state))
		assertGated(t, evs)
		if n := len(eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched)); n != 0 {
			t.Errorf("%d tools_dispatched events for a call with invalid arguments", n)
		}
		if !observed(t, evs, "[invalid arguments] ") {
			t.Errorf("no \"[invalid arguments]\" observation in the journal")
		}
	})

	// A modify decision hands the executor the rewritten arguments, never
	// the model's.
	t.Run("modified", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(t.TempDir(), "state")
		marker := filepath.Join(t.TempDir(), "marker")
		r := symbi(t, call{dir: dir}, "run", "--agent", "modified", "--state-dir", state, "--var", "marker="+marker, ".", "go")
		if r.code != 0 {
			t.Fatalf("run:\n%s", r)
		}
		got, err := os.ReadFile(marker)
		if err != nil {
			t.Fatalf("the modified call did not run: %v\n%s", err, r)
		}
		if strings.TrimSpace(string(got)) != `{"reason":"rewritten by opa"}` {
			t.Errorf("the tool got %s, want the arguments the policy wrote", got)
		}
		evs := readJournal(t, state, onlyRun(t, state))
		assertGated(t, evs)
		for _, td := range eventsOf[journal.ToolsDispatchedData](t, evs, journal.ToolsDispatched) {
			for _, c := range td.Calls {
				if string(c.Arguments) != `{"reason":"rewritten by opa"}` {
					t.Errorf("tools_dispatched shows arguments %s, want the rewritten ones", c.Arguments)
				}
			}
		}
	})

	// A recovery's fallback call is gated like the model's own calls.
	for _, allowed := range []bool{false, true} {
		agent := map[bool]string{false: "fallback_denied", true: "fallback_allowed"}[allowed]
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			marker := filepath.Join(t.TempDir(), "marker")
			r := symbi(t, call{dir: dir}, "run", "--agent", agent, "--state-dir", state, "--var", "marker="+marker, ".", "go")
			if r.code != 0 {
				t.Fatalf("run:\n%s", r)
			}
			_, err := os.Stat(marker)
			if ran := err == nil; ran != allowed {
				t.Fatalf("the fallback ran = %v, want %v\n%s", ran, allowed, r)
			}
			evs := readJournal(t, state, onlyRun(t, state))
			assertGated(t, evs)
			want := map[bool]string{false: "deny", true: "allow"}[allowed]
			var decided bool
			for _, pe := range eventsOf[journal.PolicyEvaluatedData](t, evs, journal.PolicyEvaluated) {
				for _, d := range pe.Decisions {
					if d.Action.Tool == "touch" && string(d.Decision.Outcome) == want {
						decided = true
					}
				}
			}
			if !decided {
				t.Errorf("no %s decision for the fallback touch call in the journal", want)
			}
		})
	}

	// Delegation: the delegate action passes the delegating agent's gate,
	// the delegate's tool calls its own.
	for _, tc := range []struct {
		agent     string
		delegated bool
		touched   bool
	}{
		{"boss_denied", false, false},
		{"boss", true, false},
		{"trusting_boss", true, true},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			marker := filepath.Join(t.TempDir(), "marker")
			r := symbi(t, call{dir: dir}, "run", "--agent", tc.agent, "--state-dir", state, "--var", "marker="+marker, ".", "go")
			if r.code != 0 || !strings.Contains(r.stdout, "The worker reported back.") {
				t.Fatalf("run:\n%s", r)
			}
			_, err := os.Stat(marker)
			if touched := err == nil; touched != tc.touched {
				t.Errorf("the delegate's touch ran = %v, want %v\n%s", touched, tc.touched, r)
			}
			runs, err := journal.ListRuns(state)
			if err != nil {
				t.Fatal(err)
			}
			var started int
			for _, run := range runs {
				evs := readJournal(t, state, run.ID)
				assertGated(t, evs)
				started += len(eventsOf[journal.DelegationStartedData](t, evs, journal.DelegationStarted))
			}
			if delegated := started > 0; delegated != tc.delegated {
				t.Errorf("delegated = %v, want %v (%d journals)", delegated, tc.delegated, len(runs))
			}
		})
	}

	// An ask waits in the approval queue (no terminal); the person's answer
	// decides whether the executor is reached.
	for _, approve := range []bool{false, true} {
		verb := map[bool]string{false: "deny", true: "approve"}[approve]
		t.Run("asked_"+verb, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			marker := filepath.Join(t.TempDir(), "marker")
			p := start(t, call{dir: dir}, "run", "--agent", "asked", "--state-dir", state, "--var", "marker="+marker, ".", "go")
			id := waitForApproval(t, state)
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the tool ran before anyone answered")
			}
			if r := symbi(t, call{}, verb, "--state-dir", state, "--by", "e2e", "--reason", "e2e says so", id); r.code != 0 {
				t.Fatalf("symbi %s:\n%s", verb, r)
			}
			r := p.wait(t)
			if r.code != 0 {
				t.Fatalf("run:\n%s", r)
			}
			_, err := os.Stat(marker)
			if ran := err == nil; ran != approve {
				t.Fatalf("after %s the tool ran = %v\n%s", verb, ran, r)
			}
			evs := readJournal(t, state, onlyRun(t, state))
			assertGated(t, evs)
			decided := eventsOf[journal.ApprovalDecidedData](t, evs, journal.ApprovalDecided)
			if len(decided) != 1 || decided[0].Approved != approve || decided[0].By != "e2e" {
				t.Errorf("approval_decided events %+v, want one with approved=%v by e2e", decided, approve)
			}
		})
	}
}

// waitForApproval polls the approval queue until a request is pending and
// returns its id.
func waitForApproval(t *testing.T, state string) string {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		m, _ := filepath.Glob(filepath.Join(state, "approvals", "*.request.json"))
		if len(m) > 0 {
			return strings.TrimSuffix(filepath.Base(m[0]), ".request.json")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no approval request in %s after %v", state, hangLimit)
	return ""
}

func trailHas(r *journal.GateRecord, engine, decision string) bool {
	for _, d := range r.Trail {
		if d.Engine == engine && string(d.Outcome) == decision {
			return true
		}
	}
	return false
}

// observed reports whether an observations_collected event holds a message
// that starts with prefix.
func observed(t *testing.T, evs []journal.Event, prefix string) bool {
	type message struct {
		Content string `json:"content"`
	}
	type observations struct {
		Messages []message `json:"messages"`
	}
	for _, o := range eventsOf[observations](t, evs, journal.ObservationsCollected) {
		for _, m := range o.Messages {
			if strings.HasPrefix(m.Content, prefix) {
				return true
			}
		}
	}
	return false
}

// assertGated checks the bar "a tool call never reaches an executor
// without a gate decision" on a journal: every dispatched call was allowed
// (or modified) by an earlier policy_evaluated decision, or asked and then
// approved by a person; every tool result with output was dispatched.
func assertGated(t *testing.T, evs []journal.Event) {
	t.Helper()
	let := map[string]bool{}   // call id → the gate let it through
	asked := map[string]bool{} // call id → the gate asked a person
	dispatched := map[string]bool{}
	for _, ev := range evs {
		key := func(callID string) string { return ev.Agent + "\x00" + callID }
		switch ev.Type {
		case journal.Started:
			// A resumed attempt redoes an interrupted iteration: its calls
			// are gated again.
			clear(let)
			clear(asked)
		case journal.PolicyEvaluated:
			var d journal.PolicyEvaluatedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			for _, rec := range d.Decisions {
				if rec.Action.Type != "tool_call" {
					continue
				}
				switch rec.Decision.Outcome {
				case "allow", "modify":
					let[key(rec.Action.CallID)] = true
				case "ask":
					asked[key(rec.Action.CallID)] = true
				}
			}
		case journal.ApprovalDecided:
			var d journal.ApprovalDecidedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.Approved && asked[key(d.CallID)] {
				let[key(d.CallID)] = true
			}
		case journal.ToolsDispatched:
			var d journal.ToolsDispatchedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Calls {
				if !let[key(c.CallID)] {
					t.Errorf("journal seq %d: %s call %s dispatched without a gate decision that allows it", ev.Seq, c.Tool, c.CallID)
				}
				dispatched[key(c.CallID)] = true
			}
		case journal.ToolResult:
			var d journal.ToolResultData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.Output != "" && !dispatched[key(d.CallID)] {
				t.Errorf("journal seq %d: %s call %s has output but was never dispatched", ev.Seq, d.Tool, d.CallID)
			}
		}
	}
}
