package engine

import (
	"strings"
	"unicode"

	"github.com/symbi-dev/symbi/plan"
)

// ProfileMode returns the loop mode a task profile selects, and whether the
// profile is known: plan.ProfileMode, the table the compiler's profile
// defaults come from.
func ProfileMode(profile string) (string, bool) { return plan.ProfileMode(profile) }

// autoKeywords are the whole words (after lowercasing) that select a
// profile under profile = "auto", checked in this order: planning words
// first, since a plan usually also needs tools.
func autoKeywords() []struct {
	profile string
	words   []string
} {
	return []struct {
		profile string
		words   []string
	}{
		{"plan_required", []string{"plan", "steps", "step-by-step", "roadmap", "stages", "phases", "migrate", "migration"}},
		{"high_confidence_answer", []string{"verify", "verified", "confirm", "exact", "exactly", "precise", "certain", "accurate", "double-check"}},
		{"complex_analysis", []string{"analyze", "analyse", "analysis", "compare", "comparison", "evaluate", "assess", "tradeoffs", "trade-offs", "why"}},
		{"tool_required", []string{"calculate", "compute", "search", "find", "lookup", "fetch", "read", "open", "list", "download", "run", "weather", "file", "files", "url"}},
	}
}

// AutoProfile picks a profile for input by whole-word match, so "planet"
// does not select plan_required and "research" does not select
// tool_required. With no match an agent with tools gets tool_required and
// one without gets simple_answer.
func AutoProfile(input string, hasTools bool) string {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(input), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
	}) {
		words[strings.Trim(w, "-")] = true
		words[w] = true
	}
	for _, k := range autoKeywords() {
		for _, w := range k.words {
			if words[w] {
				return k.profile
			}
		}
	}
	if hasTools {
		return "tool_required"
	}
	return "simple_answer"
}

// selectMode decides a run's mode: an explicit override wins, then profile
// "auto" chooses from the input, then the plan's mode (which the compiler
// already filled from a fixed profile).
func selectMode(a *plan.Agent, input, override string) (mode, profile string) {
	profile = a.Loop.Profile
	if override != "" {
		return override, profile
	}
	if profile == "auto" {
		// The terminate tool counts, as in the compiler's default mode.
		profile = AutoProfile(input, len(a.Tools) > 0 || len(a.Delegates) > 0 || a.Loop.AllowTerminate)
		if m, ok := ProfileMode(profile); ok {
			return m, profile
		}
	}
	if a.Loop.Mode == "" {
		return "react", profile
	}
	return a.Loop.Mode, profile
}
