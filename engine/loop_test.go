package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/scripted"
)

// agentHCL is a one-agent configuration around a scripted model; extra is
// added inside the agent block, top at the top level.
func agentHCL(top, extra string) string {
	return `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "calculator" {
  description = "arithmetic"
  builtin     = "calculator"
}
` + top + `
agent "a" {
  model    = model.m
  system   = "be brief"
  tools    = [tool.calculator]
` + extra + `
}
`
}

const allowCalc = `
policy "rules" {
  rules {
    deny  = ["calculator:expression=*/ 0*", "respond:content=*secret*"]
    allow = ["calculator"]
  }
}
`

// requests returns what the scripted model of address addr was asked.
func scriptedModel(t *testing.T, script string) *scripted.Model {
	t.Helper()
	s, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(s)
}

func withModel(m provider.Model) func(*Options) {
	return func(o *Options) { o.Models = map[string]provider.Model{"model.m": m} }
}

func lastToolMessages(req provider.Request) []provider.Message {
	var out []provider.Message
	for _, m := range req.Messages {
		if m.Role == provider.ToolRole {
			out = append(out, m)
		}
	}
	return out
}

func TestDenialIsAnObservationAndTheRunGoesOn(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"1 / 0"}}]},
		{"tool_calls":[{"id":"c2","name":"calculator","arguments":{"expression":"2 + 2"}}]},
		{"content":"4"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "divide", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "4" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	obs := lastToolMessages(reqs[1])
	if len(obs) != 1 || !strings.HasPrefix(obs[0].Content, "[policy denied] ") || obs[0].ToolCallID != "c1" {
		t.Errorf("observation after the denial: %+v", obs)
	}
	if res.Usage.ToolCalls != 1 {
		t.Errorf("tool calls = %d, want 1 (the denied call never ran)", res.Usage.ToolCalls)
	}
	var denied int
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type == journal.PolicyEvaluated {
			var d journal.PolicyEvaluatedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			denied += d.Denied
			for _, g := range d.Decisions {
				if g.Decision.Outcome == "deny" && (g.Decision.Policy != "policy.rules" || g.Decision.Engine == "") {
					t.Errorf("deny without its policy and engine: %+v", g.Decision)
				}
			}
		}
	}
	if denied != 1 {
		t.Errorf("journal records %d denials, want 1", denied)
	}
}

func TestDeniedAnswerEndsWithPolicyDenial(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[{"content":"the secret is 42"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "tell me", RunOptions{})
	if res.Termination.Reason != PolicyDenial || res.Answer != "" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	var den *DenialError
	if !errors.As(res.Termination.Err, &den) || den.Decision.Policy != "policy.rules" {
		t.Errorf("termination error %v", res.Termination.Err)
	}
}

func TestInvalidArgumentsAreCorrectedBeforeTheGate(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expr":"6*7"}}]},
		{"tool_calls":[{"id":"c2","name":"calculator","arguments":"{not json"}]},
		{"tool_calls":[{"id":"c3","name":"abacus","arguments":{}}]},
		{"tool_calls":[{"id":"c4","name":"calculator","arguments":{"expression":"6*7"}}]},
		{"content":"42"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "compute", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "42" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	for i, want := range []string{"[invalid arguments] calculator", "[invalid arguments] calculator", "[unknown tool]"} {
		obs := lastToolMessages(reqs[i+1])
		if got := obs[len(obs)-1].Content; !strings.HasPrefix(got, want) {
			t.Errorf("observation %d = %q, want prefix %q", i, got, want)
		}
	}
	if got := lastToolMessages(reqs[4]); got[len(got)-1].Content != "42" {
		t.Errorf("tool result = %q", got[len(got)-1].Content)
	}
	// No policy saw the invalid calls: their decisions come from the engine.
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type != journal.PolicyEvaluated || ev.Iteration > 3 {
			continue
		}
		var d journal.PolicyEvaluatedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.Decisions[0].Decision.Engine != "engine" || len(d.Decisions[0].Trail) != 0 {
			t.Errorf("iteration %d: %+v", ev.Iteration, d.Decisions[0])
		}
	}
}

func TestNoPolicyDeniesToolCallsWithAFix(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL("", ""), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"1+1"}}]},
		{"content":"cannot"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "compute", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	obs := lastToolMessages(m.Requests()[1])
	if !strings.Contains(obs[0].Content, "on_no_policy") {
		t.Errorf("denial does not say how to fix it: %q", obs[0].Content)
	}
}

func TestParallelToolCallsKeepTheModelsOrder(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, "policies = [policy.rules]\nloop {\n max_concurrent_tools = 2\n}"), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[
			{"id":"c1","name":"calculator","arguments":{"expression":"1+1"}},
			{"id":"c2","name":"calculator","arguments":{"expression":"2+2"}},
			{"id":"c3","name":"calculator","arguments":{"expression":"1/ 0"}},
			{"id":"c4","name":"calculator","arguments":{"expression":"4+4"}}]},
		{"content":"done"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "compute", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	obs := lastToolMessages(m.Requests()[1])
	var got []string
	for _, o := range obs {
		got = append(got, o.ToolCallID+"="+strings.SplitN(o.Content, " ", 2)[0])
	}
	if want := "c1=2 c2=4 c3=[policy c4=8"; strings.Join(got, " ") != want {
		t.Errorf("observations %q, want %q", strings.Join(got, " "), want)
	}
}

func TestSideEffectModes(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[]}`}.compile(t)
	for _, tc := range []struct {
		mode, want string
	}{
		{SideEffectsIsolate, "[side effects blocked]"},
		{SideEffectsReadOnly, "42"}, // the calculator's effect is none
		{SideEffectsAllow, "42"},
	} {
		m := scriptedModel(t, `{"turns":[{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]},{"content":"ok"}]}`)
		e, _ := newEngine(t, p, dir, withModel(m))
		res := mustRun(t, e, "a", "x", RunOptions{SideEffects: tc.mode, NoJournal: true})
		if res.Termination.Reason != Completed {
			t.Fatalf("%s: %s", tc.mode, res.Termination)
		}
		if got := lastToolMessages(m.Requests()[1])[0].Content; !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: observation %q, want %q", tc.mode, got, tc.want)
		}
	}
}

func TestNoJournalPersistsNothing(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[{"content":"hi"}]}`}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "x", RunOptions{NoJournal: true})
	if res.Termination.Reason != Completed || res.Answer != "hi" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	runs, err := journal.ListRuns(e.StateDir())
	if err != nil || len(runs) != 0 {
		t.Errorf("runs on disk: %v %v", runs, err)
	}
	if len(rec.types()) == 0 {
		t.Error("the observer should still see events")
	}
}

func TestCancelledRunIsJournalled(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[{"content":"slow","latency":"1h"}]}`}.compile(t)
	ctx, cancel := context.WithCancel(context.Background())
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.OnEvent = func(ev Event) {
			if ev.Type == journal.Started {
				cancel()
			}
		}
	})
	res, err := e.Run(ctx, "a", "x", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination.Reason != Cancelled {
		t.Fatalf("got %s", res.Termination)
	}
	evs := journalOf(t, e, res.RunID)
	last := evs[len(evs)-1]
	var d journal.TerminatedData
	if last.Type != journal.Terminated || last.Decode(&d) != nil || d.Reason != "cancelled" {
		t.Errorf("last event %s %s", last.Type, last.Data)
	}
}

func TestDelegationDepthAndCycles(t *testing.T) {
	hcl := `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
policy "open" {
  rules {
    allow = ["delegate"]
  }
}
agent "boss" {
  model     = model.m
  policies  = [policy.open]
  delegates = [agent.worker]
}
agent "worker" {
  model     = model.m
  policies  = [policy.open]
  loop {
    mode = "react"
  }
}
`
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	// The compiler refuses delegation cycles; a plan edited by hand can
	// still have one, and the engine must stop it at run time.
	p.Agent("agent.worker").Delegates = []string{"agent.boss"}
	m := scriptedModel(t, `{"turns":[
		{"when":"^top$","tool_calls":[{"id":"d1","name":"delegate","arguments":{"target":"worker","task":"sub"}}]},
		{"when":"^sub$","tool_calls":[{"id":"d2","name":"delegate","arguments":{"target":"boss","task":"again"}}]},
		{"when":"cycle","content":"worker gives up"},
		{"when":"worker gives up","content":"boss done"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "boss", "top", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "boss done" {

		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	workerObs := lastToolMessages(reqs[2])
	if len(workerObs) != 1 || !strings.Contains(workerObs[0].Content, "[delegation refused] cycle: boss -> worker -> boss") {
		t.Errorf("worker's observation: %+v", workerObs)
	}
	var started journal.DelegationStartedData
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type == journal.DelegationStarted {
			if err := ev.Decode(&started); err != nil {
				t.Fatal(err)
			}
		}
	}
	if started.Target != "agent.worker" || started.Depth != 1 || started.RunID == "" {
		t.Errorf("delegation_started %+v", started)
	}
	sub := journalOf(t, e, started.RunID)
	if sub[0].Type != journal.Started || sub[len(sub)-1].Type != journal.Terminated {
		t.Errorf("sub-run journal %v", eventTypes(sub))
	}
	// Depth: a worker already at depth 3 (the default maximum) may not delegate.
	m2 := scriptedModel(t, `{"turns":[{"tool_calls":[{"id":"d2","name":"delegate","arguments":{"target":"boss","task":"x"}}]},{"content":"ok"}]}`)
	e2, _ := newEngine(t, p, dir, withModel(m2))
	res = mustRun(t, e2, "worker", "sub", RunOptions{Depth: 3})
	if obs := lastToolMessages(m2.Requests()[1]); !strings.Contains(obs[0].Content, "max_delegation_depth 3") {
		t.Errorf("depth observation: %+v (%s)", obs, res.Termination)
	}
}

func TestAutoProfileMatchesWholeWords(t *testing.T) {
	for in, want := range map[string]string{
		"Make a plan for the migration":   "plan_required",
		"Tell me about the planet Mars":   "tool_required",
		"What is the capital of France?":  "tool_required",
		"Please verify this claim":        "high_confidence_answer",
		"Compare Go and Rust":             "complex_analysis",
		"research the topic":              "tool_required",
		"calculate 6*7":                   "tool_required",
		"replant the tree":                "tool_required",
		"Write a step-by-step guide":      "plan_required",
		"unverifiable exactness, planets": "tool_required",
	} {
		if got := AutoProfile(in, true); got != want {
			t.Errorf("AutoProfile(%q) = %s, want %s", in, got, want)
		}
	}
	if got := AutoProfile("hello there", false); got != "simple_answer" {
		t.Errorf("without tools: %s", got)
	}
}

func TestReasoningCompleteCarriesTheMessage(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]},{"content":"42"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	for _, ev := range journalOf(t, e, res.RunID) {
		switch ev.Type {
		case journal.ReasoningComplete:
			var d reasoningData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Message.Role != provider.Assistant || d.Model != "model.m" {
				t.Errorf("reasoning_complete %s", ev.Data)
			}
		case journal.ObservationsCollected:
			var d observationsData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Messages) != 1 || d.Messages[0].Content != "42" || d.Messages[0].ToolCallID != "c1" {
				t.Errorf("observations_collected %s", ev.Data)
			}
		}
	}
}
