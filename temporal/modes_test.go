package temporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// matches runs agent on input locally and as a workflow, and fails unless
// both end alike with the same timeline.
func matches(t *testing.T, path, agent, input string) (contract.Output, []engine.Event) {
	t.Helper()
	p, base := compile(t, path)
	want, wantEvs := local(t, p, base, agent, input)
	te, acts := env(t, base)
	in := start(t, acts, p, agent, input)
	te.ExecuteWorkflow(contract.Workflow, in)
	got, gotEvs := outcome(t, te)
	same(t, want, wantEvs, got, gotEvs)
	return got, gotEvs
}

func TestSimpleMatchesLocal(t *testing.T) {
	dir := files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
agent "a" {
  model = model.m
  loop { mode = "simple" }
}
`,
		"script.json": `{"turns": [{"content": "Hello there.", "chunks": ["Hello ", "there."]}]}`,
	})
	got, _ := matches(t, dir, "", "hi")
	if got.Answer != "Hello there." || got.Mode != "simple" {
		t.Errorf("got %q in mode %s", got.Answer, got.Mode)
	}
}

func TestReflectMatchesLocal(t *testing.T) {
	got, evs := matches(t, "../examples/reflect.hcl", "writer", "In one sentence: why is the sky blue?")
	if got.Termination.Reason != "completed" || !slices.ContainsFunc(evs, func(ev engine.Event) bool { return ev.Type == "reflection_evaluated" }) {
		t.Errorf("%s, %d events: no reflection", got.Termination.Reason, len(evs))
	}
}

func TestDelegationMatchesLocal(t *testing.T) {
	got, evs := matches(t, "../examples/delegation.hcl", "lead", "Why is the sky blue, and is that answer any good?")
	if got.Termination.Reason != "completed" || !slices.ContainsFunc(evs, func(ev engine.Event) bool { return ev.Type == "delegation_finished" }) {
		t.Errorf("%s: no delegation in %d events", got.Termination.Reason, len(evs))
	}
}

// plan_execute runs its steps one at a time on Temporal: the same steps
// and the same answer, the events of parallel steps in one order.
func TestPlanExecuteMatchesLocal(t *testing.T) {
	p, base := compile(t, "../examples/plan_execute.hcl")
	input := "Is 6 * 7 equal to 100 - 58?"
	want, wantEvs := local(t, p, base, "", input)
	te, acts := env(t, base)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", input))
	got, gotEvs := outcome(t, te)
	if got.Answer != want.Answer || got.Usage != want.Usage || got.Termination.Reason != "completed" {
		t.Errorf("workflow %q %+v %s, local %q %+v", got.Answer, got.Usage, got.Termination.Reason, want.Answer, want.Usage)
	}
	// Locally the two independent steps run at once and share the
	// scripted model and the budget, so which step gets which turn, and
	// what each step's usage includes, vary from run to run; the events
	// that happen are the same.
	a, b := types(wantEvs), types(gotEvs)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Errorf("the runs' events differ:\nlocal:\n%s\nworkflow:\n%s", join(a), join(b))
	}
}

func types(evs []engine.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// askFixture is an agent whose calculator call needs a person.
func askFixture(t *testing.T, extra string) string {
	budget := ""
	if extra != "" {
		budget = "budget = budget.long"
	}
	return files(t, map[string]string{
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
` + extra + `
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
  ` + budget + `
}
`,
		"script.json": `{"turns": [
  {"when": "add", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1 + 1"}}]},
  {"when": "^2$", "content": "It is 2."},
  {"when": "not approved|denied", "content": "I was not allowed."}
]}`,
	})
}

func pending(t *testing.T, te *testsuite.TestWorkflowEnvironment) []policy.Request {
	t.Helper()
	v, err := te.QueryWorkflow(contract.PendingQuery)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []policy.Request
	if err := v.Get(&reqs); err != nil {
		t.Fatal(err)
	}
	return reqs
}

// decide sends a DecideUpdate; refused hears of the validator's refusal.
func decide(te *testsuite.TestWorkflowEnvironment, id string, d Decision, refused func(error)) {
	te.UpdateWorkflow(contract.DecideUpdate, id, &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   refused,
		OnComplete: func(any, error) {},
	}, d)
}

func TestApprovalByUpdate(t *testing.T) {
	dir := askFixture(t, "")
	p, base := compile(t, dir)
	te, acts := env(t, base)
	var asked []policy.Request
	var refused []error
	te.RegisterDelayedCallback(func() {
		asked = pending(t, te)
		if len(asked) != 1 {
			t.Errorf("pending: %+v", asked)
			return
		}
		b := policy.BindingOf(asked[0])
		// A decision bound to other arguments, or to no such request, is
		// refused before it reaches the history; the run goes on waiting.
		other := b
		other.ArgumentsDigest = policy.ArgumentsDigest(policy.Action{Type: policy.ToolCall, Tool: "calculator", Arguments: []byte(`{"expression":"2 + 2"}`)})
		refuse := func(err error) { refused = append(refused, err) }
		decide(te, "u1", Decision{Binding: other, Approved: true, By: "mallory"}, refuse)
		gone := b
		gone.RequestID += "0"
		decide(te, "u2", Decision{Binding: gone, Approved: true, By: "mallory"}, refuse)
		decide(te, "u3", Decision{Binding: b, Approved: true, By: "alice", Reason: "fine"}, func(err error) {
			t.Errorf("the bound decision was refused: %v", err)
		})
	}, time.Minute)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "add 1 and 1"))
	got, evs := outcome(t, te)
	if got.Answer != "It is 2." {
		t.Fatalf("answer %q (%s)", got.Answer, got.Termination)
	}
	if len(refused) != 2 || !strings.Contains(refused[0].Error(), ErrBinding.Error()) || !strings.Contains(refused[1].Error(), ErrNoSuchRequest.Error()) {
		t.Errorf("refusals: %v", refused)
	}
	if len(asked) == 1 {
		if !strings.HasPrefix(asked[0].ID, "default-test-workflow-id~a") || asked[0].ArgumentsDigest != policy.ArgumentsDigest(asked[0].Action) {
			t.Errorf("request %+v", asked[0])
		}
		if run, ok := RunOfRequest(asked[0].ID); !ok || run != "default-test-workflow-id" {
			t.Errorf("RunOfRequest(%q) = %q", asked[0].ID, run)
		}
	}
	var decided string
	for _, ev := range evs {
		if ev.Type == "approval_decided" {
			decided = string(ev.Data)
		}
	}
	if !strings.Contains(decided, `"approved":true`) || !strings.Contains(decided, `"by":"alice"`) {
		t.Errorf("approval_decided %s", decided)
	}
}

// Nobody answers: the workflow's timer denies, as a local timeout does.
func TestApprovalTimesOut(t *testing.T) {
	dir := askFixture(t, `budget "long" { timeout = "1h" }`)
	p, base := compile(t, dir)
	te, acts := env(t, base)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "add 1 and 1"))
	got, evs := outcome(t, te)
	if got.Answer != "I was not allowed." {
		t.Fatalf("answer %q (%s)", got.Answer, got.Termination)
	}
	i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "approval_decided" })
	if i < 0 || !strings.Contains(string(evs[i].Data), `"timed_out":true`) {
		t.Errorf("no timeout in the timeline")
	}
}

// Cancelling the workflow while it waits for a person ends the run as
// cancelled, with its end in the timeline.
func TestCancelWhileWaiting(t *testing.T) {
	dir := askFixture(t, "")
	p, base := compile(t, dir)
	te, acts := env(t, base)
	te.RegisterDelayedCallback(te.CancelWorkflow, time.Minute)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "add 1 and 1"))
	got, evs := outcome(t, te)
	if got.Termination.Reason != string(engine.Cancelled) {
		t.Fatalf("termination %+v", got.Termination)
	}
	if evs[len(evs)-1].Type != "terminated" {
		t.Errorf("last event %s", evs[len(evs)-1].Type)
	}
}

func TestBudgetExhaustedMatchesLocal(t *testing.T) {
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
  rules { allow = ["calculator"] }
}
budget "tight" {
  max_iterations = 2
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.tight
}
`,
		"script.json": `{"turns": [{"tool_calls": [{"name": "calculator", "arguments": {"expression": "1 + 1"}}]}], "on_exhausted": "repeat_last"}`,
	})
	got, _ := matches(t, dir, "", "loop")
	if got.Termination.Reason != string(engine.MaxIterations) || got.Iterations != 2 {
		t.Errorf("termination %+v after %d iterations", got.Termination, got.Iterations)
	}
}

// A model activity whose worker is lost (here: a retryable failure on the
// first attempt) runs again; the run ends as the local one does.
func TestModelActivityRetried(t *testing.T) {
	p, base := compile(t, "../examples/quickstart.hcl")
	want, wantEvs := local(t, p, base, "", "What is 6 * 7?")
	var s testsuite.WorkflowTestSuite
	te := s.NewTestWorkflowEnvironment()
	wf := &Workflows{BaseDir: base}
	te.RegisterWorkflowWithOptions(wf.Run, workflowOptions())
	acts := &Activities{BaseDir: base}
	t.Cleanup(func() { acts.Close() })
	attempts := 0
	te.RegisterActivityWithOptions(func(ctx context.Context, in ModelCall) (provider.Response, error) {
		attempts++
		if attempts == 1 && activity.GetInfo(ctx).Attempt == 1 {
			return provider.Response{}, temporal.NewApplicationError("the worker went away", "lost")
		}
		return acts.Model(ctx, in)
	}, activity.RegisterOptions{Name: contract.ModelActivity})
	te.RegisterActivityWithOptions(acts.Tool, activity.RegisterOptions{Name: contract.ToolActivity})
	in := start(t, acts, p, "", "What is 6 * 7?")
	te.ExecuteWorkflow(contract.Workflow, in)
	got, gotEvs := outcome(t, te)
	same(t, want, wantEvs, got, gotEvs)
	if attempts != 3 {
		t.Errorf("%d model attempts, want 3 (one lost, two calls)", attempts)
	}
}

// A provider's own failure (already retried by the provider as the plan
// says) is not retried again by Temporal.
func TestProviderFailureNotRetried(t *testing.T) {
	dir := files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
agent "a" {
  model = model.m
}
`,
		"script.json": `{"turns": [{"error": {"kind": "authentication_failed", "message": "bad key"}}]}`,
	})
	p, base := compile(t, dir)
	want, _ := local(t, p, base, "", "hi")
	te, acts := env(t, base)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "hi"))
	got, _ := outcome(t, te)
	if got.Termination.Reason != string(engine.Failed) || got.Termination.Detail != want.Termination.Detail {
		t.Errorf("workflow %+v\nlocal    %+v", got.Termination, want.Termination)
	}
}

// Every tool call carries the workflow id / activity id as its
// idempotency key.
func TestToolIdempotencyKey(t *testing.T) {
	dir := files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "key" {
  description = "Says its idempotency key"
  command {
    argv = ["sh", "-c", "printf %s \"$SYMBI_IDEMPOTENCY_KEY\""]
  }
  effect = "write"
}
policy "rules" {
  rules { allow = ["key"] }
}
agent "a" {
  model    = model.m
  tools    = [tool.key]
  policies = [policy.rules]
}
`,
		"script.json": `{"turns": [{"when": "go", "tool_calls": [{"id": "c7", "name": "key"}]}, {"when": "/", "content": "done"}]}`,
	})
	p, base := compile(t, dir)
	te, acts := env(t, base)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "go"))
	_, evs := outcome(t, te)
	i := slices.IndexFunc(evs, func(ev engine.Event) bool { return ev.Type == "tool_result" })
	if i < 0 || !strings.Contains(string(evs[i].Data), `"output":"default-test-workflow-id/1/c7"`) {
		t.Fatalf("tool_result: %v", evs)
	}
}

// A worker whose copy of a referenced file differs refuses the run,
// naming the file.
func TestWorkerRefusesOtherFiles(t *testing.T) {
	dir := askFixture(t, "")
	p, base := compile(t, dir)
	te, acts := env(t, base)
	in := start(t, acts, p, "", "add 1 and 1")
	if err := os.WriteFile(filepath.Join(base, "script.json"), []byte(`{"turns": [{"content": "other"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	te.ExecuteWorkflow(contract.Workflow, in)
	err := te.GetWorkflowError()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrFileMismatch || !strings.Contains(ae.Message(), "script.json is sha256:") {
		t.Fatalf("workflow error %v", err)
	}
}

// An OPA policy that reads the clock (or any built-in OPA marks
// nondeterministic) is refused before the run starts: a replay of the
// gate could decide otherwise.
func TestWorkflowRefusesImpurePolicy(t *testing.T) {
	dir := files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
policy "clock" {
  opa {
    modules = ["gate.rego"]
    query   = "data.symbi.gate.decision"
  }
}
agent "a" {
  model    = model.m
  policies = [policy.clock]
}
`,
		"gate.rego": `package symbi.gate
decision := {"outcome": "allow", "reason": "daytime"} if time.now_ns() > 0
`,
		"script.json": `{"turns": [{"content": "hello"}]}`,
	})
	p, base := compile(t, dir)
	te, acts := env(t, base)
	in := start(t, acts, p, "", "hi")
	te.ExecuteWorkflow(contract.Workflow, in)
	err := te.GetWorkflowError()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrUnsupported || !strings.Contains(ae.Message(), "policy.clock calls time.now_ns") {
		t.Fatalf("workflow error %v", err)
	}
}

// scriptFixture is an agent whose write tool runs a script of the
// configuration, which leaves a mark when it runs.
func scriptFixture(t *testing.T) string {
	return files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "note" {
  description = "Writes a note"
  command {
    argv = ["sh", "scripts/note.sh"]
  }
  effect = "write"
}
policy "rules" {
  rules { allow = ["note"] }
}
agent "a" {
  model    = model.m
  tools    = [tool.note]
  policies = [policy.rules]
}
`,
		"script.json":     `{"turns": [{"when": "go", "tool_calls": [{"id": "c1", "name": "note"}]}, {"when": "/", "content": "done"}]}`,
		"scripts/note.sh": "echo noted > \"$(dirname \"$0\")/../ran\"\necho noted\n",
	})
}

// A script a command's argv names is part of the contract: a worker whose
// copy differs refuses the run before anything runs, naming the script,
// and one whose copy is the client's runs it.
func TestWorkerRefusesOtherScript(t *testing.T) {
	dir := scriptFixture(t)
	p, base := compile(t, dir)
	te, acts := env(t, base)
	in := start(t, acts, p, "", "go")
	if len(in.Scripts) != 1 || in.Scripts[0].Path != "scripts/note.sh" {
		t.Fatalf("the start lists %+v", in.Scripts)
	}
	if err := os.WriteFile(filepath.Join(base, "scripts", "note.sh"), []byte("echo other > \"$(dirname \"$0\")/../ran\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	te.ExecuteWorkflow(contract.Workflow, in)
	err := te.GetWorkflowError()
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || ae.Type() != ErrFileMismatch || !strings.Contains(ae.Message(), "scripts/note.sh is sha256:") || !ae.NonRetryable() {
		t.Fatalf("workflow error %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "ran")); !os.IsNotExist(err) {
		t.Fatalf("the script ran: %v", err)
	}

	// A worker that runs the activities only checks the same way before it
	// builds its engine.
	other := &Activities{BaseDir: base}
	defer other.Close()
	err = other.Prepare(in)
	if !errors.As(err, &ae) || ae.Type() != ErrFileMismatch || !strings.Contains(ae.Message(), "scripts/note.sh") {
		t.Fatalf("activities' worker: %v", err)
	}
}

// The same run on a worker with the client's script runs it, and its
// answer and timeline are the local engine's.
func TestScriptedToolMatchesLocal(t *testing.T) {
	dir := scriptFixture(t)
	p, base := compile(t, dir)
	want, wantEvs := local(t, p, base, "", "go")
	if err := os.Remove(filepath.Join(base, "ran")); err != nil {
		t.Fatal(err)
	}
	te, acts := env(t, base)
	te.ExecuteWorkflow(contract.Workflow, start(t, acts, p, "", "go"))
	got, gotEvs := outcome(t, te)
	same(t, want, wantEvs, got, gotEvs)
	if b, err := os.ReadFile(filepath.Join(base, "ran")); err != nil || string(b) != "noted\n" {
		t.Fatalf("the script's mark: %q %v", b, err)
	}
}
