package temporal

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// children records the child workflows te starts, as "TYPE ID".
func children(te *testsuite.TestWorkflowEnvironment) *[]string {
	var out []string
	te.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
		out = append(out, info.WorkflowType.Name+" "+info.WorkflowExecution.ID)
	})
	return &out
}

// delegationMatches runs agent locally and as a workflow, fails unless
// both end alike with the same timeline, and returns the workflow's child
// workflows.
func delegationMatches(t *testing.T, path, agent, input string) (contract.Output, []engine.Event, []string) {
	t.Helper()
	p, base := compile(t, path)
	want, wantEvs := local(t, p, base, agent, input)
	te, acts := env(t, base)
	started := children(te)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, agent, input))
	got, gotEvs := outcome(t, te)
	same(t, want, wantEvs, got, gotEvs)
	return got, gotEvs, *started
}

// The delegation example's delegation is a child workflow, RUN.d1, and the
// run's answer, usage and timeline (the delegated agent's events, its
// critic's included) are the local run's.
func TestDelegationIsAChildWorkflow(t *testing.T) {
	got, evs, started := delegationMatches(t, "../examples/delegation.hcl", "lead", "Why is the sky blue, and is that answer any good?")
	if want := []string{contract.DelegationWorkflow + " " + got.RunID + ".d1"}; !slices.Equal(started, want) {
		t.Errorf("child workflows %q, want %q", started, want)
	}
	i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "delegation_started" })
	if i < 0 || !strings.Contains(string(evs[i].Data), `"run_id":"`+got.RunID+`.d1"`) {
		t.Fatalf("delegation_started does not name the child workflow: %v", evs)
	}
	// The delegated agent's events carry the child's run id and are
	// numbered in the run's sequence.
	if ev := evs[i+1]; ev.RunID != got.RunID+".d1" || ev.Agent != "agent.researcher" || ev.Seq != evs[i].Seq+1 {
		t.Errorf("the event after delegation_started: %+v", ev)
	}
}

// A delegation that runs the caller's budget out ends both as a local one
// does: the delegated run stops at the caller's limit, in the caller's
// terms, and so does the caller.
func TestDelegationBudgetMatchesLocal(t *testing.T) {
	dir := files(t, map[string]string{
		"agent.hcl": `
model "lead" {
  provider = "scripted"
  script   = "lead.json"
}
model "worker" {
  provider = "scripted"
  script   = "worker.json"
}
tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}
policy "team" {
  rules { allow = ["delegate", "calculator"] }
}
budget "tight" {
  max_model_calls = 4
}
agent "lead" {
  model     = model.lead
  delegates = [agent.worker]
  policies  = [policy.team]
  budget    = budget.tight
}
agent "worker" {
  model    = model.worker
  tools    = [tool.calculator]
  policies = [policy.team]
}
`,
		"lead.json":   `{"turns": [{"tool_calls": [{"id": "d1", "name": "delegate", "arguments": {"target": "worker", "task": "count"}}]}, {"content": "done"}]}`,
		"worker.json": `{"turns": [{"tool_calls": [{"name": "calculator", "arguments": {"expression": "1 + 1"}}]}], "on_exhausted": "repeat_last"}`,
	})
	got, evs, started := delegationMatches(t, dir, "lead", "go")
	if got.Termination.Reason != string(engine.BudgetExceeded) || got.Termination.Limit != "max_model_calls" || got.Usage.ModelCalls != 4 {
		t.Errorf("termination %+v, usage %+v", got.Termination, got.Usage)
	}
	if len(started) != 1 {
		t.Errorf("child workflows %q", started)
	}
	i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "delegation_finished" })
	if i < 0 || !strings.Contains(string(evs[i].Data), `"reason":"budget_exceeded"`) {
		t.Errorf("delegation_finished: %v", evs)
	}
}

// delegateAsk is a lead whose delegated worker asks a person before its
// calculator call.
func delegateAsk(t *testing.T) string {
	return files(t, map[string]string{
		"agent.hcl": `
model "lead" {
  provider = "scripted"
  script   = "lead.json"
}
model "worker" {
  provider = "scripted"
  script   = "worker.json"
}
tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}
policy "team" {
  rules {
    allow = ["delegate"]
    ask   = ["calculator"]
  }
}
agent "lead" {
  model     = model.lead
  delegates = [agent.worker]
  policies  = [policy.team]
}
agent "worker" {
  model    = model.worker
  tools    = [tool.calculator]
  policies = [policy.team]
}
`,
		"lead.json": `{"turns": [
  {"when": "add", "tool_calls": [{"id": "d1", "name": "delegate", "arguments": {"target": "worker", "task": "add 1 and 1"}}]},
  {"when": "It is 2", "content": "The worker says 2."},
  {"content": "No answer."}
]}`,
		"worker.json": `{"turns": [
  {"when": "add", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1 + 1"}}]},
  {"when": "^2$", "content": "It is 2."},
  {"when": "not approved|denied", "content": "I was not allowed."}
]}`,
	})
}

// An approval the delegated agent asks for waits in the delegation's
// child workflow: its pending query lists it, with the child's id in the
// request's, and a decision bound to it there is taken, one bound
// elsewhere refused, as in the run's own workflow.
func TestApprovalInDelegation(t *testing.T) {
	p, base := compile(t, delegateAsk(t))
	te, acts := env(t, base)
	child := "default-test-workflow-id.d1"
	var asked []policy.Request
	var refused []error
	te.RegisterDelayedCallback(func() {
		v, err := te.QueryWorkflowByID(child, contract.PendingQuery)
		if err != nil {
			t.Errorf("pending query of %s: %v", child, err)
			return
		}
		if err := v.Get(&asked); err != nil || len(asked) != 1 {
			t.Errorf("pending in %s: %+v %v", child, asked, err)
			return
		}
		if run, ok := RunOfRequest(asked[0].ID); !ok || run != child {
			t.Errorf("request %q names run %q, want the child workflow %s", asked[0].ID, run, child)
		}
		if parent := pending(t, te); len(parent) != 0 {
			t.Errorf("the parent lists %+v", parent)
		}
		b := policy.BindingOf(asked[0])
		other := b
		other.ArgumentsDigest = policy.ArgumentsDigest(policy.Action{Type: policy.ToolCall, Tool: "calculator", Arguments: []byte(`{"expression":"2 + 2"}`)})
		cb := func(refuse func(error)) *testsuite.TestUpdateCallback {
			return &testsuite.TestUpdateCallback{OnAccept: func() {}, OnReject: refuse, OnComplete: func(any, error) {}}
		}
		if err := te.UpdateWorkflowByID(child, contract.DecideUpdate, "u1", cb(func(err error) { refused = append(refused, err) }), Decision{Binding: other, Approved: true, By: "mallory"}); err != nil {
			t.Error(err)
		}
		if err := te.UpdateWorkflowByID(child, contract.DecideUpdate, "u2", cb(func(err error) { t.Errorf("the bound decision was refused: %v", err) }), Decision{Binding: b, Approved: true, By: "alice"}); err != nil {
			t.Error(err)
		}
	}, time.Minute)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "lead", "add 1 and 1"))
	got, evs := outcome(t, te)
	if got.Answer != "The worker says 2." {
		t.Fatalf("answer %q (%+v)", got.Answer, got.Termination)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), ErrBinding.Error()) {
		t.Errorf("refusals: %v", refused)
	}
	i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "approval_decided" })
	if i < 0 || evs[i].RunID != child || !strings.Contains(string(evs[i].Data), `"by":"alice"`) {
		t.Errorf("approval_decided in the run's timeline: %v", evs)
	}
}

// Cancelling the run while its delegation waits for a person cancels the
// delegation's child workflow too; both end as cancelled, and the run's
// timeline holds the delegation's end.
func TestCancelDuringDelegation(t *testing.T) {
	p, base := compile(t, delegateAsk(t))
	te, acts := env(t, base)
	te.RegisterDelayedCallback(te.CancelWorkflow, time.Minute)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "lead", "add 1 and 1"))
	got, evs := outcome(t, te)
	if got.Termination.Reason != string(engine.Cancelled) {
		t.Fatalf("termination %+v", got.Termination)
	}
	i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "delegation_finished" })
	if i < 0 || !strings.Contains(string(evs[i].Data), `"reason":"cancelled"`) {
		t.Errorf("delegation_finished: %v", evs)
	}
	if evs[len(evs)-1].Type != "terminated" || evs[len(evs)-1].RunID != got.RunID {
		t.Errorf("last event %+v", evs[len(evs)-1])
	}
}

// An approval a best-of-N candidate asks for waits in the candidate's
// child workflow, RUN.c0, and is decided there with the same binding
// checks as the run's own.
func TestApprovalInCandidate(t *testing.T) {
	dir := files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}
policy "rules" {
  rules {
    ask = ["calculator"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
}
best_of_n "one" {
  agent        = agent.a
  candidates   = 1
  side_effects = "allow"
  scorer {
    expr = 1
  }
}
`,
		"script.json": `{"turns": [
  {"when": "add", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1 + 1"}}]},
  {"when": "^2$", "content": "It is 2."},
  {"when": "not approved|denied", "content": "I was not allowed."}
]}`,
	})
	p, base := compile(t, dir)
	te, acts := env(t, base)
	child := "default-test-workflow-id.c0"
	var asked []policy.Request
	var refused []error
	te.RegisterDelayedCallback(func() {
		v, err := te.QueryWorkflowByID(child, contract.PendingQuery)
		if err != nil {
			t.Errorf("pending query of %s: %v", child, err)
			return
		}
		if err := v.Get(&asked); err != nil || len(asked) != 1 {
			t.Errorf("pending in %s: %+v %v", child, asked, err)
			return
		}
		if run, ok := RunOfRequest(asked[0].ID); !ok || run != child {
			t.Errorf("request %q names run %q, want the candidate's workflow %s", asked[0].ID, run, child)
		}
		b := policy.BindingOf(asked[0])
		gone := b
		gone.RequestID += "0"
		cb := func(refuse func(error)) *testsuite.TestUpdateCallback {
			return &testsuite.TestUpdateCallback{OnAccept: func() {}, OnReject: refuse, OnComplete: func(any, error) {}}
		}
		if err := te.UpdateWorkflowByID(child, contract.DecideUpdate, "u1", cb(func(err error) { refused = append(refused, err) }), Decision{Binding: gone, Approved: true, By: "mallory"}); err != nil {
			t.Error(err)
		}
		if err := te.UpdateWorkflowByID(child, contract.DecideUpdate, "u2", cb(func(err error) { t.Errorf("the bound decision was refused: %v", err) }), Decision{Binding: b, Approved: true, By: "alice"}); err != nil {
			t.Error(err)
		}
	}, time.Minute)
	in := start(t, acts, p, "a", "add 1 and 1")
	in.BestOfN = "best_of_n.one"
	te.ExecuteWorkflow(contract.Workflow, in)
	got, _ := outcome(t, te)
	if got.Answer != "It is 2." || got.Termination.Reason != "completed" {
		t.Fatalf("answer %q (%+v)", got.Answer, got.Termination)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Error(), ErrNoSuchRequest.Error()) {
		t.Errorf("refusals: %v", refused)
	}
}

// A delegation whose events are too many to come back in its result (one
// payload in the run's history) leaves them in its own workflow: the run
// still gets its answer and usage.
func TestDelegationEventsTooLargeStayInTheChild(t *testing.T) {
	long := strings.Repeat("forty-two ", 40_000) // 400 KB, twice in reasoning_complete, once in terminated
	dir := files(t, map[string]string{
		"agent.hcl": `
model "lead" {
  provider = "scripted"
  script   = "lead.json"
}
model "worker" {
  provider = "scripted"
  script   = "worker.json"
}
policy "team" {
  rules { allow = ["delegate"] }
}
budget "big" {
  max_total_tokens = 0
}
agent "lead" {
  model     = model.lead
  delegates = [agent.worker]
  policies  = [policy.team]
  budget    = budget.big
}
agent "worker" {
  model = model.worker
  loop { max_output_tokens = 1000000 }
}
`,
		"lead.json":   `{"turns": [{"tool_calls": [{"id": "d1", "name": "delegate", "arguments": {"target": "worker", "task": "talk"}}]}, {"content": "done"}]}`,
		"worker.json": `{"turns": [{"content": "` + long + `"}]}`,
	})
	p, base := compile(t, dir)
	te, acts := env(t, base)
	var omitted int
	te.SetOnChildWorkflowCompletedListener(func(_ *workflow.Info, result converter.EncodedValue, _ error) {
		var end DelegationEnd
		if err := result.Get(&end); err != nil {
			t.Error(err)
		}
		omitted = end.Omitted
		if end.Outcome.Answer != long || len(end.Events) != 0 {
			t.Errorf("the result carries %d events and an answer of %d bytes", len(end.Events), len(end.Outcome.Answer))
		}
	})
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "lead", "go"))
	got, evs := outcome(t, te)
	if got.Answer != "done" || omitted == 0 {
		t.Fatalf("answer %q (%+v), %d events omitted; %d events", got.Answer, got.Termination, omitted, len(evs))
	}
	for _, ev := range evs {
		if ev.RunID != got.RunID {
			t.Errorf("an event of %s in the run's timeline: %s", ev.RunID, ev.Type)
		}
	}
	if i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "delegation_finished" }); i < 0 || !strings.Contains(string(evs[i].Data), `"reason":"completed"`) {
		t.Errorf("no completed delegation_finished")
	}
}
