package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

const allowTerminate = `
  policies = [policy.rules]
  loop {
    allow_terminate = true
  }`

// toolSpec returns the spec named name of a model request.
func toolSpec(req provider.Request, name string) (provider.ToolSpec, bool) {
	for _, s := range req.Tools {
		if s.Name == name {
			return s, true
		}
	}
	return provider.ToolSpec{}, false
}

// gateRecords lists every gate decision of a journal, in order.
func gateRecords(t *testing.T, evs []journal.Event) []journal.GateRecord {
	t.Helper()
	var out []journal.GateRecord
	for _, ev := range eventsOf(t, evs, journal.PolicyEvaluated) {
		var d journal.PolicyEvaluatedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Decisions...)
	}
	return out
}

func terminatedData(t *testing.T, evs []journal.Event) journal.TerminatedData {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].Type != journal.Terminated {
		t.Fatalf("journal does not end with terminated: %v", eventTypes(evs))
	}
	var d journal.TerminatedData
	if err := evs[len(evs)-1].Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAllowedTerminateEndsTheRunWithTheModelsReason(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, allowTerminate), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"content":"I cannot do this.","tool_calls":[{"id":"t1","name":"terminate","arguments":{"reason":"the ledger file is not in the workspace"}}]},
		{"content":"never asked"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "reconcile the ledger", RunOptions{})

	if res.Termination.Reason != AgentTerminated || res.Termination.Detail != "the ledger file is not in the workspace" || res.Answer != "" {
		t.Fatalf("got %s, answer %q", res.Termination, res.Answer)
	}
	var te *TerminatedError
	if !errors.As(res.Termination.Err, &te) || te.Reason != "the ledger file is not in the workspace" {
		t.Errorf("termination error %v", res.Termination.Err)
	}
	if got := res.Termination.String(); got != "agent_terminated: the ledger file is not in the workspace" {
		t.Errorf("summary %q", got)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1: the run ends after the terminate turn", len(reqs))
	}
	spec, ok := toolSpec(reqs[0], plan.TerminateTool)
	if !ok {
		t.Fatalf("the model was not offered %q: %+v", plan.TerminateTool, reqs[0].Tools)
	}
	var schema struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Required) != 1 || schema.Required[0] != "reason" || schema.Properties["reason"]["type"] != "string" {
		t.Errorf("terminate parameters %s", spec.Parameters)
	}

	evs := journalOf(t, e, res.RunID)
	gates := gateRecords(t, evs)
	if len(gates) != 1 || gates[0].Action.Type != policy.Terminate || gates[0].Action.Reason != "the ledger file is not in the workspace" || gates[0].Decision.Outcome != policy.Allow {
		t.Fatalf("gate records %+v", gates)
	}
	d := terminatedData(t, evs)
	if d.Reason != string(AgentTerminated) || !strings.Contains(d.Error, "the ledger file is not in the workspace") {
		t.Errorf("terminated %+v", d)
	}
	if n := len(eventsOf(t, evs, journal.ToolsDispatched)); n != 0 {
		t.Errorf("%d tools_dispatched events; terminate runs no tool", n)
	}
	if res.Usage.ToolCalls != 0 {
		t.Errorf("tool calls = %d, want 0", res.Usage.ToolCalls)
	}
}

func TestDeniedTerminateIsAnObservationAndTheRunGoesOn(t *testing.T) {
	rules := `
policy "rules" {
  rules {
    deny  = ["terminate"]
    allow = ["calculator"]
  }
}
`
	p, dir := fixture{"main.hcl": agentHCL(rules, allowTerminate), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"t1","name":"terminate","arguments":{"reason":"too hard"}}]},
		{"content":"42"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "6*7?", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "42" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	obs := lastToolMessages(reqs[1])
	if len(obs) != 1 || obs[0].ToolCallID != "t1" || obs[0].Name != plan.TerminateTool || !strings.HasPrefix(obs[0].Content, "[policy denied] ") {
		t.Errorf("observation after the denied terminate: %+v", obs)
	}
	gates := gateRecords(t, journalOf(t, e, res.RunID))
	if len(gates) < 1 || gates[0].Action.Type != policy.Terminate || gates[0].Decision.Outcome != policy.Deny || gates[0].Decision.Policy != "policy.rules" {
		t.Errorf("gate records %+v", gates)
	}
}

func TestTerminateWithoutAReasonIsCorrected(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, allowTerminate), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"t1","name":"terminate","arguments":{"reason":"  "}}]},
		{"tool_calls":[{"id":"t2","name":"terminate","arguments":{"reason":"no data"}}]}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != AgentTerminated || res.Termination.Detail != "no data" {
		t.Fatalf("got %s", res.Termination)
	}
	obs := lastToolMessages(m.Requests()[1])
	if len(obs) != 1 || !strings.HasPrefix(obs[0].Content, "[invalid arguments] terminate: ") {
		t.Errorf("observation after an empty reason: %+v", obs)
	}
}

// A turn that proposes terminate beside other calls: every action is
// gated, the allowed calls run, and then the run ends.
func TestTerminateBesideToolCallsRunsThemFirst(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, allowTerminate), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[
			{"id":"t1","name":"terminate","arguments":{"reason":"done what I could"}},
			{"id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]},
		{"content":"never asked"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != AgentTerminated || res.Termination.Detail != "done what I could" {
		t.Fatalf("got %s", res.Termination)
	}
	if len(m.Requests()) != 1 {
		t.Errorf("%d model calls, want 1", len(m.Requests()))
	}
	if res.Usage.ToolCalls != 1 {
		t.Errorf("tool calls = %d, want 1: the calculator call ran", res.Usage.ToolCalls)
	}
	evs := journalOf(t, e, res.RunID)
	if len(gateRecords(t, evs)) != 2 {
		t.Errorf("gate records %+v, want both actions decided", gateRecords(t, evs))
	}
	results := eventsOf(t, evs, journal.ToolResult)
	if len(results) != 1 {
		t.Fatalf("%d tool_result events, want 1", len(results))
	}
	var tr journal.ToolResultData
	if err := results[0].Decode(&tr); err != nil {
		t.Fatal(err)
	}
	if tr.Tool != "calculator" || tr.Output != "42" {
		t.Errorf("tool_result %+v", tr)
	}
	// The iteration is closed: one observation per proposed call, in the
	// model's order, before the terminated event.
	types := eventTypes(evs)
	if n := len(types); n < 2 || types[n-2] != journal.ObservationsCollected {
		t.Fatalf("events %v", types)
	}
	var od observationsData
	if err := evs[len(evs)-2].Decode(&od); err != nil {
		t.Fatal(err)
	}
	if len(od.Messages) != 2 || od.Messages[0].Name != plan.TerminateTool || od.Messages[1].Content != "42" {
		t.Errorf("observations %+v", od.Messages)
	}
	if d := terminatedData(t, evs); d.Reason != string(AgentTerminated) {
		t.Errorf("terminated %+v", d)
	}
}

func TestTerminateIsNotOfferedWithoutAllowTerminate(t *testing.T) {
	p, dir := fixture{"main.hcl": agentHCL(allowCalc, `policies = [policy.rules]`), "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"t1","name":"terminate","arguments":{"reason":"bored"}}]},
		{"content":"42"}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "42" {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	if _, ok := toolSpec(reqs[0], plan.TerminateTool); ok {
		t.Errorf("terminate offered without allow_terminate: %+v", reqs[0].Tools)
	}
	// A call of a tool the agent does not have is a tool_call of an
	// unknown tool, not a terminate.
	obs := lastToolMessages(reqs[1])
	if len(obs) != 1 || !strings.HasPrefix(obs[0].Content, "[unknown tool] ") {
		t.Errorf("observation %+v", obs)
	}
	gates := gateRecords(t, journalOf(t, e, res.RunID))
	if len(gates) < 1 || gates[0].Action.Type != policy.ToolCall {
		t.Errorf("gate records %+v", gates)
	}
}

// A delegate that gives up is a failed delegation for the caller, whose
// run goes on.
func TestDelegateThatTerminatesIsAFailedDelegation(t *testing.T) {
	hcl := `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
policy "rules" {
  rules {
    allow = ["delegate"]
  }
}
agent "lead" {
  model     = model.m
  delegates = [agent.helper]
  policies  = [policy.rules]
}
agent "helper" {
  model = model.m
  loop {
    allow_terminate = true
  }
}
`
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[
		{"tool_calls":[{"id":"d1","name":"delegate","arguments":{"target":"helper","task":"find the ledger"}}]},
		{"tool_calls":[{"id":"t1","name":"terminate","arguments":{"reason":"no ledger anywhere"}}]},
		{"content":"The helper found no ledger."}]}`)
	e, _ := newEngine(t, p, dir, withModel(m))
	res := mustRun(t, e, "lead", "x", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "The helper found no ledger." {
		t.Fatalf("got %s %q", res.Termination, res.Answer)
	}
	reqs := m.Requests()
	if _, ok := toolSpec(reqs[0], plan.TerminateTool); ok {
		t.Errorf("the lead, without allow_terminate, was offered terminate")
	}
	if _, ok := toolSpec(reqs[1], plan.TerminateTool); !ok {
		t.Errorf("the helper was not offered terminate")
	}
	obs := lastToolMessages(reqs[2])
	if len(obs) != 1 || !strings.Contains(obs[0].Content, "agent_terminated: no ledger anywhere") {
		t.Errorf("observation %+v", obs)
	}
}
