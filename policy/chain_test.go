package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

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
