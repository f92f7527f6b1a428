package journal

import (
	"fmt"
	"slices"
	"strings"

	"github.com/symbi-dev/symbi/policy"
)

// ShadowTally is where one policy in shadow mode disagreed with what was
// enforced, over the actions it saw: a run's, or many runs' (`symbi policy
// shadow`).
type ShadowTally struct {
	Policy string `json:"policy"`
	// Versions are the policy's versions that decided (policy.Version), in
	// the order first seen: more than one when it changed between runs.
	Versions []string `json:"versions,omitempty"`
	Runs     int      `json:"runs,omitempty"` // the journals counted; 0 within a run
	// Actions are the actions it decided. Of them, WouldDeny it denied
	// that ran; WouldAllow it allowed (or modified) that were refused;
	// WouldAsk it would have asked a person about, and none was asked.
	// A not_applicable decision agrees with anything.
	Actions    int `json:"actions"`
	WouldDeny  int `json:"would_deny"`
	WouldAllow int `json:"would_allow"`
	WouldAsk   int `json:"would_ask"`
	// EngineErrors are its denies that were engine errors, not decisions
	// (counted in WouldDeny too when the action ran).
	EngineErrors int `json:"engine_errors"`
}

// Disagreements is how many actions it would have decided otherwise.
func (t ShadowTally) Disagreements() int { return t.WouldDeny + t.WouldAllow + t.WouldAsk }

// String says it in a line: "policy.strict would have denied 3 of 12
// actions, allowed 1 that was refused; 2 engine errors".
func (t ShadowTally) String() string {
	var parts []string
	if t.WouldDeny > 0 || t.Disagreements() == 0 {
		parts = append(parts, fmt.Sprintf("would have denied %d of %d actions", t.WouldDeny, t.Actions))
	}
	if t.WouldAllow > 0 {
		parts = append(parts, fmt.Sprintf("allowed %d that %s refused", t.WouldAllow, wasWere(t.WouldAllow)))
	}
	if t.WouldAsk > 0 {
		parts = append(parts, fmt.Sprintf("asked a person about %d that ran without one", t.WouldAsk))
	}
	s := t.Policy + " " + strings.Join(parts, ", ")
	if t.WouldDeny == 0 && t.Disagreements() > 0 {
		s += fmt.Sprintf(" (of %d actions)", t.Actions)
	}
	if t.EngineErrors > 0 {
		s += fmt.Sprintf("; %d engine error%s", t.EngineErrors, map[bool]string{true: "", false: "s"}[t.EngineErrors == 1])
	}
	if t.Runs > 0 {
		s += fmt.Sprintf(" in %d run%s", t.Runs, map[bool]string{true: "", false: "s"}[t.Runs == 1])
	}
	return s
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// TallyShadow adds one gate record's shadow decisions to ts and returns
// it: each compared with whether the action ran (the record's decision
// is allow or modify) and whether a person was asked.
func TallyShadow(ts []ShadowTally, rec GateRecord) []ShadowTally {
	if len(rec.Shadow) == 0 {
		return ts
	}
	ran := rec.Decision.Outcome == policy.Allow || rec.Decision.Outcome == policy.Modify
	asked := false
	for _, d := range rec.Trail {
		asked = asked || d.Outcome == policy.Ask || d.Engine == "person"
	}
	for _, d := range rec.Shadow {
		i := slices.IndexFunc(ts, func(t ShadowTally) bool { return t.Policy == d.Policy })
		if i < 0 {
			ts = append(ts, ShadowTally{Policy: d.Policy})
			i = len(ts) - 1
		}
		t := &ts[i]
		if d.Version != "" && !slices.Contains(t.Versions, d.Version) {
			t.Versions = append(t.Versions, d.Version)
		}
		t.Actions++
		if d.EngineError {
			t.EngineErrors++
		}
		switch d.Outcome {
		case policy.Deny:
			if ran {
				t.WouldDeny++
			}
		case policy.Allow, policy.Modify:
			if !ran {
				t.WouldAllow++
			}
		case policy.Ask:
			if !asked {
				t.WouldAsk++
			}
		}
	}
	return ts
}

// ShadowOf tallies the shadow decisions of a run's journal.
func ShadowOf(evs []Event) []ShadowTally {
	var ts []ShadowTally
	for _, ev := range evs {
		if ev.Type != PolicyEvaluated {
			continue
		}
		var d PolicyEvaluatedData
		if ev.Decode(&d) != nil {
			continue
		}
		for _, rec := range d.Decisions {
			ts = TallyShadow(ts, rec)
		}
	}
	return ts
}

// MergeShadow adds the tallies of one more run to ts.
func MergeShadow(ts, run []ShadowTally) []ShadowTally {
	for _, r := range run {
		i := slices.IndexFunc(ts, func(t ShadowTally) bool { return t.Policy == r.Policy })
		if i < 0 {
			ts = append(ts, ShadowTally{Policy: r.Policy})
			i = len(ts) - 1
		}
		t := &ts[i]
		for _, v := range r.Versions {
			if !slices.Contains(t.Versions, v) {
				t.Versions = append(t.Versions, v)
			}
		}
		t.Runs++
		t.Actions += r.Actions
		t.WouldDeny += r.WouldDeny
		t.WouldAllow += r.WouldAllow
		t.WouldAsk += r.WouldAsk
		t.EngineErrors += r.EngineErrors
	}
	return ts
}
