package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

// writerHCL is a react agent with one command tool that appends its call's
// idempotency key to a log (a real side effect), with the on_resume given.
func writerHCL(onResume string) string {
	attr := ""
	if onResume != "" {
		attr = fmt.Sprintf("on_resume = %q", onResume)
	}
	return `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "append" {
  description = "appends a line to the log"
  command {
    argv = ["sh", "-c", "cat >/dev/null; echo \"$SYMBI_IDEMPOTENCY_KEY\" >> log.txt; echo appended"]
  }
  effect = "write"
  ` + attr + `
}
policy "rules" {
  rules {
    allow = ["append"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.append]
  policies = [policy.rules]
  loop {
    mode = "react"
  }
}
`
}

// The model appends once, then answers by what it was told.
const writerScript = `{"turns":[
 {"when":"^go$","tool_calls":[{"id":"w1","name":"append","arguments":{}}]},
 {"when":"^appended","content":"appended once"},
 {"when":"outcome unknown","content":"not sure it was appended"}]}`

// approverFunc answers every question with approved.
type approverFunc bool

func (a approverFunc) Approve(context.Context, policy.Request) (policy.ApprovalRecord, error) {
	return policy.ApprovalRecord{Approved: bool(a), By: "tester", Via: "test", Reason: "decided in a test"}, nil
}

// cutJournal keeps the journal's lines up to and including the first event
// that keep accepts, as a process killed right after writing it leaves the
// file, and returns the events kept.
func cutJournal(t *testing.T, e *Engine, runID string, keep func(journal.Event) bool) []journal.Event {
	t.Helper()
	// The finished run's journal holds the run's lock until it is closed;
	// a resume in the same process must wait for that, as a second process
	// would be refused.
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	evs := journalOf(t, e, runID)
	n := -1
	for i, ev := range evs {
		if keep(ev) {
			n = i + 1
			break
		}
	}
	if n < 0 {
		t.Fatalf("no event to cut after in %v", eventTypes(evs))
	}
	path := journal.Path(e.StateDir(), runID)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:n], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return evs[:n]
}

func logLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// resumeWriter runs the writer agent, cuts its journal right after the
// write call was dispatched (the tool ran, its result never reached the
// file), and resumes it on a fresh engine with approver.
func resumeWriter(t *testing.T, onResume string, approver policy.Approver) (*Result, []journal.Event, string) {
	t.Helper()
	p, dir := fixture{"main.hcl": writerHCL(onResume), "script.json": writerScript}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	first := mustRun(t, e, "a", "go", RunOptions{})
	if first.Answer != "appended once" {
		t.Fatalf("uninterrupted run: %s %q", first.Termination, first.Answer)
	}
	cutJournal(t, e, first.RunID, func(ev journal.Event) bool { return ev.Type == journal.ToolsDispatched })
	e2, _ := newEngine(t, p, dir, func(o *Options) {
		o.StateDir = e.StateDir()
		if approver != nil {
			o.Approver = approver
		}
	})
	res, err := e2.Resume(context.Background(), first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return res, journalOf(t, e2, first.RunID), dir
}

func outcomeUnknown(t *testing.T, evs []journal.Event) []journal.ToolOutcomeUnknownData {
	t.Helper()
	var out []journal.ToolOutcomeUnknownData
	for _, ev := range eventsOf(t, evs, journal.ToolOutcomeUnknown) {
		var d journal.ToolOutcomeUnknownData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// A write cut short by a crash is not run again by default: the model is
// told its outcome is unknown, without a second model call for the
// interrupted turn, and the journal says so.
func TestResumeReportsAWriteCutShort(t *testing.T) {
	res, evs, dir := resumeWriter(t, "", nil)
	if res.Termination.Reason != Completed || res.Answer != "not sure it was appended" {
		t.Fatalf("resumed: %s %q", res.Termination, res.Answer)
	}
	if lines := logLines(t, dir); len(lines) != 1 {
		t.Errorf("the write ran %d times: %v", len(lines), lines)
	}
	unknown := outcomeUnknown(t, evs)
	if len(unknown) != 1 || unknown[0].Retried || unknown[0].OnResume != "report" || unknown[0].CallID != "w1" ||
		unknown[0].IdempotencyKey != builtins.IdempotencyKey(res.RunID, 1, "w1") {
		t.Errorf("tool_outcome_unknown %+v", unknown)
	}
	if res.Usage.ModelCalls != 2 || res.Iterations != 2 {
		t.Errorf("%d model calls, %d iterations: the interrupted turn was asked again", res.Usage.ModelCalls, res.Iterations)
	}
	var obs observationsData
	for _, ev := range eventsOf(t, evs, journal.ObservationsCollected) {
		if err := ev.Decode(&obs); err != nil {
			t.Fatal(err)
		}
	}
	if len(obs.Messages) != 1 || !strings.HasPrefix(obs.Messages[0].Content, "[outcome unknown] append") || obs.Messages[0].ToolCallID != "w1" {
		t.Errorf("observations %+v", obs.Messages)
	}
}

// on_resume = "retry" runs the call again, with the same idempotency key.
func TestResumeRetriesWithTheSameKey(t *testing.T) {
	res, evs, dir := resumeWriter(t, "retry", nil)
	if res.Answer != "appended once" {
		t.Fatalf("resumed: %s %q", res.Termination, res.Answer)
	}
	lines := logLines(t, dir)
	if len(lines) != 2 || lines[0] != lines[1] || lines[0] != builtins.IdempotencyKey(res.RunID, 1, "w1") {
		t.Errorf("log %v: want the same key twice", lines)
	}
	if u := outcomeUnknown(t, evs); len(u) != 1 || !u[0].Retried || u[0].OnResume != "retry" {
		t.Errorf("tool_outcome_unknown %+v", u)
	}
}

// on_resume = "ask" puts the question to the approver: a yes runs the call
// again, a no (or no approver) reports it.
func TestResumeAsksAPerson(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approver policy.Approver
		runs     int
		answer   string
	}{
		{"yes", approverFunc(true), 2, "appended once"},
		{"no", approverFunc(false), 1, "not sure it was appended"},
		{"nobody", nil, 1, "not sure it was appended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, evs, dir := resumeWriter(t, "ask", tc.approver)
			if res.Answer != tc.answer {
				t.Fatalf("resumed: %s %q", res.Termination, res.Answer)
			}
			if n := len(logLines(t, dir)); n != tc.runs {
				t.Errorf("the write ran %d times, want %d", n, tc.runs)
			}
			if n := len(eventsOf(t, evs, journal.ApprovalRequested)); n != 1 {
				t.Errorf("%d approval requests, want 1", n)
			}
			if u := outcomeUnknown(t, evs); len(u) != 1 || u[0].Retried != (tc.runs == 2) {
				t.Errorf("tool_outcome_unknown %+v", u)
			}
		})
	}
}

// A result that reached the journal is used as it is: the call is not run
// again and nothing is reported unknown.
func TestResumeKeepsAJournalledResult(t *testing.T) {
	p, dir := fixture{"main.hcl": writerHCL(""), "script.json": writerScript}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	first := mustRun(t, e, "a", "go", RunOptions{})
	cutJournal(t, e, first.RunID, func(ev journal.Event) bool { return ev.Type == journal.ToolResult })
	e2, _ := newEngine(t, p, dir, func(o *Options) { o.StateDir = e.StateDir() })
	res, err := e2.Resume(context.Background(), first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "appended once" || len(logLines(t, dir)) != 1 {
		t.Errorf("resumed: %q, log %v", res.Answer, logLines(t, dir))
	}
	if u := outcomeUnknown(t, journalOf(t, e2, first.RunID)); len(u) != 0 {
		t.Errorf("tool_outcome_unknown %+v", u)
	}
}

// A model call in flight when the process died is charged on resume: one
// call and the estimate its model_call_started line recorded.
func TestResumeChargesAModelCallInFlight(t *testing.T) {
	p, dir := fixture{"main.hcl": chainHCL, "script.json": strings.ReplaceAll(chainScript, `"latency":"150ms",`, "")}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	want := mustRun(t, e, "a", "start", RunOptions{})
	kept := cutJournal(t, e, want.RunID, func(ev journal.Event) bool {
		return ev.Type == journal.ModelCallStarted && ev.Iteration == 3
	})
	var inFlight journal.ModelCallStartedData
	if err := kept[len(kept)-1].Decode(&inFlight); err != nil {
		t.Fatal(err)
	}
	if inFlight.EstimatedPromptTokens <= 0 || inFlight.EstimatedCompletionTokens <= 0 {
		t.Fatalf("model_call_started %+v has no estimate", inFlight)
	}
	e2, _ := newEngine(t, p, dir, func(o *Options) { o.StateDir = e.StateDir() })
	got, err := e2.Resume(context.Background(), want.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Answer != want.Answer {
		t.Fatalf("resumed: %s %q", got.Termination, got.Answer)
	}
	if got.Usage.ModelCalls != want.Usage.ModelCalls+1 {
		t.Errorf("%d model calls, want %d: the call in flight is not charged", got.Usage.ModelCalls, want.Usage.ModelCalls+1)
	}
	// The redone call costs what the uninterrupted one did (same script,
	// same conversation): the difference is the charged estimate.
	extra := inFlight.EstimatedPromptTokens + inFlight.EstimatedCompletionTokens
	if got.Usage.TotalTokens != want.Usage.TotalTokens+extra {
		t.Errorf("%d tokens, want %d + %d charged for the call in flight", got.Usage.TotalTokens, want.Usage.TotalTokens, extra)
	}
}

// chargeInFlight charges the last unanswered call of each attempt by its
// estimate, and a failed call (another call followed it) as a call alone.
func TestChargeInFlight(t *testing.T) {
	ev := func(typ, data string) journal.Event { return journal.Event{Type: typ, Data: []byte(data)} }
	started := `{"model":"model.m","estimated_prompt_tokens":100,"estimated_completion_tokens":50,"estimated_cost_usd":0.5}`
	evs := []journal.Event{
		ev(journal.Started, `{"input":"x"}`),
		ev(journal.ModelCallStarted, started), ev(journal.ReasoningComplete, `{"model":"model.m","usage":{}}`),
		ev(journal.ModelCallStarted, started), // failed: another call follows
		ev(journal.ModelCallStarted, started), // in flight when attempt 1 died
		ev(journal.Started, `{"input":"x","resume_after_seq":5}`),
		ev(journal.ModelCallStarted, started), // in flight when attempt 2 died
	}
	got := spentBy(evs)
	chargeInFlight(&got, evs)
	if got.ModelCalls != 4 || got.TotalTokens != 300 || got.CostUSD != 1.0 {
		t.Errorf("charged %d calls, %d tokens, $%v; want 4 calls (1 answered, 1 failed, 2 in flight), 300 tokens, $1", got.ModelCalls, got.TotalTokens, got.CostUSD)
	}
}

// FuzzResumeScan reads arbitrary journal lines as a resume does and holds
// what a resume relies on: every unfinished call was dispatched, a cut
// iteration acted and has one action per tool call, and charging the
// calls in flight never gives budget back nor charges more calls than
// were started.
func FuzzResumeScan(f *testing.F) {
	line := func(seq int, iter int, typ, data string) string {
		return fmt.Sprintf(`{"seq":%d,"ts":"2026-12-02T13:30:00Z","run":"r","agent":"agent.a","iteration":%d,"event":%q,"data":%s}`+"\n", seq, iter, typ, data)
	}
	f.Add([]byte(line(1, 0, journal.Started, `{"input":"go"}`)+
		line(2, 1, journal.ModelCallStarted, `{"model":"model.m","estimated_prompt_tokens":10,"estimated_completion_tokens":5}`)+
		line(3, 1, journal.ReasoningComplete, `{"model":"model.m","usage":{},"usage_known":false,"duration_ms":1,"actions":[{"type":"tool_call","tool":"append","call_id":"w1"}],"message":{"role":"assistant","tool_calls":[{"id":"w1","name":"append","arguments":"{}"}]}}`)+
		line(4, 1, journal.PolicyEvaluated, `{"decisions":[{"action":{"type":"tool_call","tool":"append","call_id":"w1"},"decision":{"decision":"allow"}}],"denied":0}`)+
		line(5, 1, journal.ToolsDispatched, `{"calls":[{"call_id":"w1","tool":"append"}],"concurrency":0}`)), 0)
	f.Add([]byte(line(1, 0, journal.Started, `{"input":"go"}`)+
		line(2, 1, journal.ModelCallStarted, `{"model":"model.m","estimated_prompt_tokens":-9223372036854775808,"estimated_completion_tokens":9223372036854775807,"estimated_cost_usd":-1}`)+
		line(3, 1, journal.ToolOutcomeUnknown, `{"call_id":"w1","tool":"append","idempotency_key":"r/1/w1","on_resume":"report","retried":false}`)), 3)
	f.Fuzz(func(t *testing.T, data []byte, lastComplete int) {
		r := journal.NewReader(strings.NewReader(string(data)))
		var evs []journal.Event
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		in := findInterrupted("r", evs, lastComplete, true)
		dispatched := map[string]bool{}
		started := int64(0)
		for _, ev := range evs {
			switch ev.Type {
			case journal.ToolsDispatched:
				var d journal.ToolsDispatchedData
				if ev.Decode(&d) == nil {
					for _, c := range d.Calls {
						dispatched[builtins.IdempotencyKey("r", ev.Iteration, c.CallID)] = true
					}
				}
			case journal.ModelCallStarted:
				started++
			}
		}
		for key := range in.unfinished {
			if !dispatched[key] {
				t.Fatalf("unfinished %s was never dispatched", key)
			}
		}
		if c := in.cut; c != nil && (!c.acted || len(c.actions) == 0 || len(c.actions) != len(c.message.ToolCalls) || c.iteration != lastComplete+1) {
			t.Fatalf("cut round %+v", c)
		}
		before := spentBy(evs)
		after := before
		chargeInFlight(&after, evs)
		if after.ModelCalls < before.ModelCalls || after.ModelCalls-before.ModelCalls > started ||
			after.PromptTokens < before.PromptTokens || after.CompletionTokens < before.CompletionTokens ||
			after.TotalTokens < before.TotalTokens || !(after.CostUSD >= before.CostUSD) && before.CostUSD == before.CostUSD {
			t.Fatalf("charging calls in flight turned %+v into %+v (%d started)", before, after, started)
		}
	})
}
