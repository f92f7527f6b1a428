package opa

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/plan"

	. "github.com/symbi-dev/symbi/policy"
)

// modifyRego caps a search's limit; the rules policy after it sees the
// modified arguments.
const modifyRego = `package cap

decision := {"decision": "modify", "reason": "limit capped", "arguments": object.union(input.action.arguments, {"limit": 5})} if {
	input.action.tool == "web_search"
	input.action.arguments.limit > 5
}

decision := {"decision": "modify", "reason": "bad", "arguments": {"limit": "many"}} if input.action.arguments.cmd == "bad"

default decision := {"decision": "not_applicable"}
`

func chainPlan() *plan.Plan {
	return testPlan(
		rulesPolicy("policy.deny", plan.RulesPolicy{Deny: []string{"shell:cmd=sudo*"}, Ask: []string{"shell:cmd=rm*"}}),
		opaPolicy("policy.cap", "data.cap.decision", file("policies/cap.rego", modifyRego)),
		rulesPolicy("policy.allow", plan.RulesPolicy{Allow: []string{"web_search:limit=5", "shell"}, Deny: []string{"web_search:limit=50"}}),
	)
}

// schemaCheck stands in for the tool schema validator the engine injects:
// limit must be a number.
func schemaCheck(tool string, args json.RawMessage) error {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return err
	}
	if l, ok := m["limit"]; ok {
		if _, isNum := l.(float64); !isNum {
			return errors.New("limit: want a number")
		}
	}
	return nil
}

func links(t testing.TB, p *plan.Plan, addrs ...string) []Link {
	var out []Link
	for _, a := range addrs {
		out = append(out, Link{Address: a, Gate: mustGate(t, p, a)})
	}
	return out
}

func TestChain(t *testing.T) {
	p := chainPlan()
	c := NewChain(links(t, p, "policy.deny", "policy.cap", "policy.allow"), "deny", schemaCheck)
	for _, tc := range []struct {
		name      string
		action    Action
		want      Outcome
		policy    string
		reason    string
		decisions int
		approved  bool
		ask       bool
		args      string
	}{
		{"deny stops the chain", toolCall("shell", `{"cmd":"sudo ls"}`), Deny, "policy.deny", "sudo", 1, false, false, ""},
		{"modify hands the new arguments on", toolCall("web_search", `{"query":"x","limit":50}`), Modify, "policy.cap", "limit capped", 3, true, false, `{"query":"x","limit":5}`},
		{"modify that fails the schema is a deny", toolCall("shell", `{"cmd":"bad"}`), Deny, "policy.cap", "fail the tool's schema: limit: want a number", 2, false, false, ""},
		{"ask, then allowed later, still asks", toolCall("shell", `{"cmd":"rm"}`), Ask, "policy.deny", "rm*", 3, false, true, ""},
		{"all not applicable: on_no_policy deny says how to fix it", toolCall("calculator", `{}`), Deny, "", `no policy of agent.researcher addresses tool_call "calculator"`, 3, false, false, ""},
		{"delegate not addressed is denied", Action{Type: Delegate, Target: "critic"}, Deny, "", `delegate:target=critic`, 3, false, false, ""},
		{"respond not addressed is allowed", Action{Type: Respond, Content: "42"}, Allow, "", "no policy addresses respond", 3, true, false, ""},
		{"terminate not addressed is allowed", Action{Type: Terminate}, Allow, "", "", 3, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := c.Gate(context.Background(), input(p, tc.action))
			d := v.Decision
			if d.Outcome != tc.want || d.Policy != tc.policy || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("final %s %q by %q, want %s containing %q by %q", d.Outcome, d.Reason, d.Policy, tc.want, tc.reason, tc.policy)
			}
			if len(v.Decisions) != tc.decisions {
				t.Errorf("%d decisions, want %d: %+v", len(v.Decisions), tc.decisions, v.Decisions)
			}
			if v.Approved.Valid() != tc.approved || v.Ask != tc.ask {
				t.Errorf("approved %v ask %v, want %v %v", v.Approved.Valid(), v.Ask, tc.approved, tc.ask)
			}
			if tc.args != "" {
				if !jsonEqual(t, v.Approved.Action().Arguments, tc.args) || !jsonEqual(t, d.Arguments, tc.args) {
					t.Errorf("approved arguments %s (decision %s), want %s", v.Approved.Action().Arguments, d.Arguments, tc.args)
				}
				if len(v.Approved.Decisions()) != tc.decisions {
					t.Errorf("approved carries %d decisions", len(v.Approved.Decisions()))
				}
			}
		})
	}
}

type gateFunc func(context.Context, Input) Decision

func (f gateFunc) Decide(ctx context.Context, in Input) Decision { return f(ctx, in) }

func TestChainBrokenPolicyFailsClosed(t *testing.T) {
	// A policy whose Rego fails at evaluation time (conflicting values) is a
	// deny, whatever comes after it.
	p := testPlan(opaPolicy("policy.broken", "data.b.decision", file("policies/b.rego", "package b\n\ndecision := \"allow\" if input.action.tool\ndecision := \"deny\" if input.action.type\n")),
		rulesPolicy("policy.allow", plan.RulesPolicy{Allow: []string{"*"}}))
	c := NewChain(links(t, p, "policy.broken", "policy.allow"), "allow", nil)
	v := c.Gate(context.Background(), input(p, toolCall("shell", `{}`)))
	if v.Decision.Outcome != Deny || v.Decision.Policy != "policy.broken" || !strings.Contains(v.Decision.Reason, "opa:") {
		t.Errorf("got %+v", v.Decision)
	}
}

func TestChainConcurrent(t *testing.T) {
	p := testPlan(
		opaPolicy("policy.rego", "data.symbi.gate.decision", file("policies/gate.rego", gateRego)),
		cedarPolicy("policy.access", file("policies/tools.cedar", toolsCedar)),
		rulesPolicy("policy.rules", plan.RulesPolicy{Allow: []string{"web_search"}}),
	)
	data := file("policies/data.json", `{"limits": {"max_cost_usd": 0.5}}`)
	p.Policy("policy.rego").OPA.Data = &data
	c := NewChain(links(t, p, "policy.rules", "policy.rego", "policy.access"), "deny", nil)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				a, want := toolCall("web_search", `{"query":"x"}`), Allow
				if i%2 == 1 {
					a, want = toolCall("shell", `{"cmd":"ls"}`), Deny
				}
				if v := c.Gate(context.Background(), input(p, a)); v.Decision.Outcome != want {
					errs <- string(v.Decision.Outcome) + ": " + v.Decision.Reason
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestDecisionsMarkEngineErrors(t *testing.T) {
	ctx := context.Background()
	broken := opaPolicy("policy.broken", "data.b.decision", file("b.rego", "package b\n\ndecision := \"allow\" if to_number(\"x\") > 0\n"))
	decided := rulesPolicy("policy.rules", plan.RulesPolicy{Deny: []string{"shell"}})
	p := testPlan(broken, decided)
	in := Input{Action: Action{Type: ToolCall, Tool: "shell", Arguments: json.RawMessage(`{}`)}}
	if d := mustGate(t, p, "policy.broken").Decide(ctx, in); d.Outcome != Deny || !d.EngineError {
		t.Errorf("an OPA evaluation error: %+v, want a deny marked as an engine error", d)
	}
	if d := mustGate(t, p, "policy.rules").Decide(ctx, in); d.Outcome != Deny || d.EngineError {
		t.Errorf("a rules deny: %+v, want a deny that is a decision", d)
	}
	panics := NewChain([]Link{{Address: "policy.p", Gate: gateFunc(func(context.Context, Input) Decision { panic("boom") })}}, "deny", nil)
	if v := panics.Gate(ctx, in); !v.Decision.EngineError {
		t.Errorf("a panic: %+v, want an engine error", v.Decision)
	}
	// The version is the policy's content: the same rules, the same
	// version, whatever the address; other rules, another.
	a := Version(decided)
	other := decided
	other.Address = "policy.elsewhere"
	if Version(other) != a {
		t.Errorf("the version depends on the address")
	}
	other.Rules = &plan.RulesPolicy{Deny: []string{"shell", "curl"}}
	if Version(other) == a || !strings.HasPrefix(a, "sha256:") {
		t.Errorf("versions %s and %s", a, Version(other))
	}
}

const toolsCedar = `// Researchers may read; writes ask a person; destructive tools are forbidden.
@id("read")
permit (principal == Symbi::Agent::"researcher", action == Symbi::Action::"call_tool", resource)
when { resource.effect == "read" };

@id("write")
@ask("writes need a person")
permit (principal, action == Symbi::Action::"call_tool", resource)
when { resource.effect == "write" };

@id("no-destructive")
@reason("destructive tools are not allowed")
forbid (principal, action == Symbi::Action::"call_tool", resource)
when { resource.effect == "destructive" };

@id("spend")
@reason("over the spend limit")
forbid (principal, action, resource)
when { context.usage.cost_usd.greaterThan(decimal("0.5")) };

@id("delegate")
permit (principal in Symbi::Team::"research", action == Symbi::Action::"delegate", resource == Symbi::Agent::"critic");

@id("respond")
permit (principal, action == Symbi::Action::"respond", resource)
unless { context.arguments has content && context.arguments.content like "*secret*" };

permit (principal, action == Symbi::Action::"terminate", resource) when { resource == principal };
`
