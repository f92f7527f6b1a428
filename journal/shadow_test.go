package journal

import (
	"testing"

	"github.com/symbi-dev/symbi/policy"
)

// TestTallyShadow: a shadow deny of an action that ran, a shadow allow of
// one that was refused, and a shadow ask of one no person was asked about
// are disagreements; anything else (not_applicable, an ask where a person
// was asked) agrees.
func TestTallyShadow(t *testing.T) {
	allow := policy.Decision{Outcome: policy.Allow}
	deny := policy.Decision{Outcome: policy.Deny}
	shadow := func(o policy.Outcome, engineErr bool) []policy.Decision {
		return []policy.Decision{{Policy: "policy.s", Outcome: o, Shadow: true, Version: "v1", EngineError: engineErr}}
	}
	var ts []ShadowTally
	for _, rec := range []GateRecord{
		{Decision: allow, Shadow: shadow(policy.Deny, false)},                                                 // would deny
		{Decision: allow, Shadow: shadow(policy.Deny, true)},                                                  // would deny, an engine error
		{Decision: deny, Shadow: shadow(policy.Allow, false)},                                                 // would allow
		{Decision: allow, Shadow: shadow(policy.Ask, false)},                                                  // would ask
		{Decision: allow, Trail: []policy.Decision{{Outcome: policy.Ask}}, Shadow: shadow(policy.Ask, false)}, // a person was asked
		{Decision: deny, Shadow: shadow(policy.Deny, false)},                                                  // agrees
		{Decision: allow, Shadow: shadow(policy.NotApplicable, false)},                                        // no opinion
		{Decision: allow}, // no shadow policy
	} {
		ts = TallyShadow(ts, rec)
	}
	want := ShadowTally{Policy: "policy.s", Versions: []string{"v1"}, Actions: 7, WouldDeny: 2, WouldAllow: 1, WouldAsk: 1, EngineErrors: 1}
	if len(ts) != 1 || ts[0].String() != want.String() || ts[0].Actions != 7 || ts[0].Disagreements() != 4 {
		t.Fatalf("tally %+v, want %+v", ts, want)
	}
	if s := ts[0].String(); s != "policy.s would have denied 2 of 7 actions, allowed 1 that was refused, asked a person about 1 that ran without one; 1 engine error" {
		t.Errorf("String: %s", s)
	}
	all := MergeShadow(MergeShadow(nil, ts), ts)
	if all[0].Runs != 2 || all[0].Actions != 14 || all[0].WouldDeny != 4 {
		t.Errorf("merged %+v", all[0])
	}
}
