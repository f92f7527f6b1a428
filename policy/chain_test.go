package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/plan"
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

func TestChainOnNoPolicyAllowAndNoLinks(t *testing.T) {
	p := testPlan()
	v := NewChain(nil, "allow", nil).Gate(context.Background(), input(p, toolCall("shell", `{}`)))
	if v.Decision.Outcome != Allow || !v.Approved.Valid() || v.Decision.Engine != "chain" {
		t.Errorf("on_no_policy allow: got %+v", v.Decision)
	}
	v = NewChain(nil, "", nil).Gate(context.Background(), input(p, toolCall("shell", `{}`)))
	if v.Decision.Outcome != Deny || !strings.Contains(v.Decision.Reason, "agent.researcher has no policies") || !strings.Contains(v.Decision.Reason, `allow = ["shell"]`) {
		t.Errorf("default on_no_policy: got %+v", v.Decision)
	}
}

type gateFunc func(context.Context, Input) Decision

func (f gateFunc) Decide(ctx context.Context, in Input) Decision { return f(ctx, in) }

func TestChainFailsClosed(t *testing.T) {
	p := testPlan()
	allow := Link{Address: "policy.allow", Gate: gateFunc(func(context.Context, Input) Decision { return Decision{Outcome: Allow} })}
	for _, tc := range []struct {
		name   string
		link   Link
		reason string
	}{
		{"panic", Link{Address: "policy.panics", Gate: gateFunc(func(context.Context, Input) Decision { panic("boom") })}, "policy engine failed: boom"},
		{"unknown outcome", Link{Address: "policy.odd", Gate: gateFunc(func(context.Context, Input) Decision { return Decision{Outcome: "perhaps"} })}, `unknown decision "perhaps"`},
		{"zero decision", Link{Address: "policy.zero", Gate: gateFunc(func(context.Context, Input) Decision { return Decision{} })}, `unknown decision ""`},
		{"modify of a respond", Link{Address: "policy.mod", Gate: gateFunc(func(context.Context, Input) Decision {
			return Decision{Outcome: Modify, Arguments: json.RawMessage(`{}`)}
		})}, "only a tool call's arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := toolCall("shell", `{}`)
			if tc.name == "modify of a respond" {
				a = Action{Type: Respond, Content: "x"}
			}
			v := NewChain([]Link{tc.link, allow}, "allow", nil).Gate(context.Background(), input(p, a))
			if v.Decision.Outcome != Deny || !strings.Contains(v.Decision.Reason, tc.reason) || v.Approved.Valid() {
				t.Errorf("got %+v, want a deny containing %q", v.Decision, tc.reason)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v := NewChain([]Link{allow}, "allow", nil).Gate(ctx, input(p, toolCall("shell", `{}`))); v.Decision.Outcome != Deny {
		t.Errorf("cancelled context: got %+v", v.Decision)
	}
}

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

func TestChainFromPlanApprovalAlways(t *testing.T) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{Allow: []string{"*"}}))
	p.Agent("agent.researcher").Policies = []string{"policy.rules"}
	c, err := ChainFromPlan(context.Background(), p, "agent.researcher", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	v := c.Gate(context.Background(), input(p, toolCall("write_file", `{"path":"x"}`)))
	if v.Decision.Outcome != Allow || !v.Ask || v.Approved.Valid() {
		t.Fatalf("approval = always: got %+v ask=%v valid=%v", v.Decision, v.Ask, v.Approved.Valid())
	}
	v = c.Gate(context.Background(), input(p, toolCall("web_search", `{}`)))
	if v.Ask || !v.Approved.Valid() {
		t.Errorf("approval = never: got ask=%v valid=%v", v.Ask, v.Approved.Valid())
	}
	if _, err := ChainFromPlan(context.Background(), p, "agent.nobody", t.TempDir(), nil); err == nil {
		t.Error("want an error for an unknown agent")
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

func TestChainLaterDenyBeatsAsk(t *testing.T) {
	p := testPlan(
		rulesPolicy("policy.ask", plan.RulesPolicy{Ask: []string{"shell"}}),
		rulesPolicy("policy.deny", plan.RulesPolicy{Deny: []string{"shell:cmd=rm*"}}),
	)
	c := NewChain(links(t, p, "policy.ask", "policy.deny"), "deny", nil)
	v := c.Gate(context.Background(), input(p, toolCall("shell", `{"cmd":"rm -r x"}`)))
	if v.Ask || v.Decision.Outcome != Deny || v.Decision.Policy != "policy.deny" || len(v.Decisions) != 2 {
		t.Errorf("got ask=%v %+v, want the later deny", v.Ask, v.Decision)
	}
}
