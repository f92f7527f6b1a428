package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// seen is a gate that records the arguments it was given and decides o.
func seen(o Outcome, args *[]string) Gate {
	return gateFunc(func(_ context.Context, in Input) Decision {
		*args = append(*args, string(in.Action.Arguments))
		return Decision{Outcome: o, Reason: string(o)}
	})
}

// TestChainShadow: shadow policies are evaluated on every action, after
// the enforced ones and whatever they decided (a deny that stops the
// chain included), each on the action as the chain was given it; they
// never change the verdict; every decision carries its order and version.
func TestChainShadow(t *testing.T) {
	var modSaw, shadowSaw []string
	modify := gateFunc(func(_ context.Context, in Input) Decision {
		modSaw = append(modSaw, string(in.Action.Arguments))
		return Decision{Outcome: Modify, Arguments: json.RawMessage(`{"cmd":"safe"}`)}
	})
	denyAll := seen(Deny, &shadowSaw)
	var askSaw []string
	c := NewChain([]Link{
		{Address: "policy.watch", Gate: denyAll, Shadow: true, Version: "v-watch"},
		{Address: "policy.mod", Gate: modify, Version: "v-mod"},
		{Address: "policy.ask", Gate: seen(Ask, &askSaw), Shadow: true, Version: "v-ask"},
		{Address: "policy.allow", Gate: gateFunc(func(context.Context, Input) Decision { return Decision{Outcome: Allow} }), Version: "v-allow"},
	}, "deny", nil)
	in := Input{Action: Action{Type: ToolCall, Tool: "shell", Arguments: json.RawMessage(`{"cmd":"rm -rf /"}`)}}
	v := c.Gate(context.Background(), in)
	if !v.Approved.Valid() || v.Ask || v.Decision.Outcome != Modify {
		t.Fatalf("verdict %+v: shadow policies changed what was enforced", v.Decision)
	}
	if len(v.Decisions) != 2 || v.Decisions[0].Order != 1 || v.Decisions[0].Version != "v-mod" || v.Decisions[1].Order != 2 || v.Decisions[1].Version != "v-allow" {
		t.Errorf("enforced decisions %+v: want policy.mod (1) then policy.allow (2), with their versions", v.Decisions)
	}
	if len(v.Shadow) != 2 || v.Shadow[0].Policy != "policy.watch" || v.Shadow[0].Order != 3 || !v.Shadow[0].Shadow || v.Shadow[0].Version != "v-watch" ||
		v.Shadow[1].Policy != "policy.ask" || v.Shadow[1].Order != 4 || v.Shadow[1].Outcome != Ask {
		t.Errorf("shadow decisions %+v: want policy.watch (3), policy.ask (4), marked shadow", v.Shadow)
	}
	if shadowSaw[0] != `{"cmd":"rm -rf /"}` {
		t.Errorf("the shadow policy saw %s, want the action as the chain was given it", shadowSaw[0])
	}

	// A deny stops the enforced chain; the shadow policies still decide.
	shadowSaw = nil
	stop := NewChain([]Link{
		{Address: "policy.no", Gate: gateFunc(func(context.Context, Input) Decision { return Decision{Outcome: Deny, Reason: "no"} })},
		{Address: "policy.watch", Gate: seen(Allow, &shadowSaw), Shadow: true},
	}, "deny", nil)
	v = stop.Gate(context.Background(), in)
	if v.Approved.Valid() || len(v.Shadow) != 1 || v.Shadow[0].Outcome != Allow || v.Shadow[0].Order != 2 {
		t.Errorf("after a deny: verdict %v, shadow %+v", v.Decision, v.Shadow)
	}

	// Only shadow policies: nothing enforced addresses the call, so
	// on_no_policy decides, and says why.
	only := NewChain([]Link{{Address: "policy.watch", Gate: seen(Allow, &shadowSaw), Shadow: true}}, "deny", nil)
	v = only.Gate(context.Background(), Input{Agent: AgentInfo{Name: "a"}, Action: in.Action})
	if v.Approved.Valid() || !strings.Contains(v.Decision.Reason, "all of its policies are in shadow mode") {
		t.Errorf("only shadow policies: %+v", v.Decision)
	}
}
