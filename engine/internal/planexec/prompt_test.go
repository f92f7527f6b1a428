package planexec

import (
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/provider"
)

func TestSafeID(t *testing.T) {
	for in, want := range map[string]string{"s1": "s1", "step-2_b": "step-2_b", "../x y": "___x_y", "é": "_"} {
		if got := SafeID(in); got != want {
			t.Errorf("SafeID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrompt(t *testing.T) {
	tools := []provider.ToolSpec{{Name: "search"}, {Name: "calc"}}
	p := Prompt("add things", 4, tools, nil, nil)
	for _, want := range []string{"tools: search, calc.", "<task>\nadd things\n</task>", "Use at most 4 steps."} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(Prompt("t", 0, nil, nil, nil), "at most") || !strings.Contains(Prompt("t", 0, nil, nil, nil), "(none)") {
		t.Error("no limit and no tools are not said as such")
	}
	// A replan lists what is done, in id order whatever the map's, with
	// long results clipped, and names the failure.
	done := map[string]Result{
		"b": {Task: "second", Status: Failed, Err: errors.New("boom")},
		"a": {Task: "first", Status: Done, Output: strings.Repeat("x", 600)},
	}
	p = Prompt("t", 0, nil, done, &StepFailedError{Step: "b", Err: errors.New("boom")})
	ia, ib := strings.Index(p, "- step a (first) is done"), strings.Index(p, "- step b (second) failed: boom")
	if ia < 0 || ib < ia {
		t.Errorf("done steps not listed in id order:\n%s", p)
	}
	if !strings.Contains(p, strings.Repeat("x", 500)+"…") || strings.Contains(p, strings.Repeat("x", 501)) {
		t.Error("a long result is not clipped to 500 bytes")
	}
	if !strings.Contains(p, "Step b failed: boom") {
		t.Errorf("the failure is not named:\n%s", p)
	}
}
