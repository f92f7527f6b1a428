package reflection

import (
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

// Model answers are untrusted text: reading a score from one must never
// panic, and a score it returns is always in 0..1.
func FuzzParseScore(f *testing.F) {
	for _, s := range []string{
		`{"score": 0.8, "feedback": "x"}`, `{"scores": {"accuracy": 1, "brevity": 0.2}}`, "7/10", "80%", ".5",
		"```json\n{\"score\": 1}\n```", `{"score": 1e309}`, `{"scores": {}}`, "{", "}{", "999999999999999999999%",
	} {
		f.Add(s)
	}
	rubric := []plan.Criterion{{Name: "accuracy", Weight: 0.7}, {Name: "brevity", Weight: 0.3}}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range [][]plan.Criterion{nil, rubric} {
			ev, err := ParseScore(s, r)
			if err == nil && !inUnit(ev.Score) {
				t.Fatalf("ParseScore(%q) = %v, outside 0..1", s, ev.Score)
			}
		}
	})
}
