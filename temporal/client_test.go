package temporal

import (
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
)

// A delegation's events come back in its caller's events when it ends:
// those its own workflow's events already showed are passed over, the rest
// shown, and its workflow is followed no further.
func TestFollowShowsADelegationsEventsOnce(t *testing.T) {
	f := &follower{id: "RUN"}
	started, _ := json.Marshal(journal.DelegationStartedData{Target: "agent.w", RunID: "RUN.d1"})
	ev := func(typ, run string) engine.Event { return engine.Event{Type: typ, RunID: run} }
	if f.passOver(&f.own, engine.Event{Type: journal.DelegationStarted, RunID: "RUN", Data: started}) {
		t.Fatal("delegation_started passed over")
	}
	c := f.children["RUN.d1"]
	if c == nil {
		t.Fatal("the delegation's workflow is not followed")
	}
	c.handled = 3 // shown live from RUN.d1's own events
	var shown []bool
	for range 5 {
		shown = append(shown, !f.passOver(&f.own, ev("model_call_started", "RUN.d1")))
	}
	if !c.done {
		t.Error("the delegation's workflow is still followed after its events came back")
	}
	if got, want := shownString(shown), shownString([]bool{false, false, false, true, true}); got != want {
		t.Errorf("shown %s, want %s", got, want)
	}
	if f.passOver(&f.own, ev(journal.DelegationFinished, "RUN")) || f.passOver(&f.own, ev("terminated", "RUN")) {
		t.Error("the run's own events after the delegation passed over")
	}
}

func shownString(b []bool) string {
	s := ""
	for _, x := range b {
		if x {
			s += "shown "
		} else {
			s += "passed "
		}
	}
	return s
}

// A candidate is followed from its candidate_started on, even one that
// ends before a describe could see it open.
func TestFollowTracksCandidates(t *testing.T) {
	f := &follower{id: "RUN"}
	data, _ := json.Marshal(journal.CandidateStartedData{Index: 2})
	if f.passOver(&f.own, engine.Event{Type: journal.CandidateStarted, RunID: "RUN", Data: data}) {
		t.Fatal("candidate_started passed over")
	}
	if f.children["RUN.c2"] == nil || len(f.order) != 1 {
		t.Errorf("following %q", f.order)
	}
}
