package interp

import (
	"path/filepath"
	"strings"
	"testing"
)

// A best-of-N budget that sets only max_model_calls inherits max_total_tokens
// = 100000, which then needs a token estimate: the diagnostic names the
// inherited default and both ways out. One that sets the limit itself is
// told to give the estimate.
func TestZeroEstimateNamesTheInheritedDefault(t *testing.T) {
	detail := func(t *testing.T, src string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "main.hcl")
		writeFile(t, p, []byte(src))
		_, diags := Compile(p, Options{LookupEnv: noEnv})
		for _, d := range diags {
			if d.Summary == "Best-of-N estimate missing" {
				if d.Subject == nil {
					t.Error("no range")
				}
				return d.Detail
			}
		}
		t.Fatalf("no estimate diagnostic:\n%s", listDiags(diags))
		return ""
	}
	const rest = `
model "m" {
  provider = "scripted"
  script   = "s.json"
}
agent "a" {
  model = model.m
}
best_of_n "n" {
  agent      = agent.a
  candidates = 4
  budget     = budget.bon
  scorer {
    expr = 1
  }
}
`
	got := detail(t, `budget "bon" {
  max_model_calls = 8
}`+rest)
	for _, want := range []string{
		"budget.bon does not set max_total_tokens, so it inherits the default max_total_tokens = 100000",
		"Set total_tokens_per_candidate",
		"or set max_total_tokens = 0 in budget.bon",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("inherited: %q\ndoes not say %q", got, want)
		}
	}
	got = detail(t, `budget "bon" {
  max_total_tokens = 5000
}`+rest)
	if !strings.Contains(got, "budget.bon sets max_total_tokens") || strings.Contains(got, "inherits") {
		t.Errorf("set by the block: %q", got)
	}
}
