package bestofn

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
)

func TestScoreFromCommand(t *testing.T) {
	for out, want := range map[string]float64{"0.25\n": 0.25, " 3 ": 3, `{"score": 0.5}`: 0.5, "-1": -1} {
		s := ScoreFromCommand(out)
		if s.Err != nil || s.Score != want || !s.Accepted {
			t.Errorf("ScoreFromCommand(%q) = %+v", out, s)
		}
	}
	if s := ScoreFromCommand(`{"score": 1, "accepted": false}`); s.Err != nil || s.Accepted {
		t.Errorf("accepted false was ignored: %+v", s)
	}
	for _, bad := range []string{"", "high", "0.5 0.6", `{"nope": 1}`, "NaN"} {
		if s := ScoreFromCommand(bad); s.Err == nil {
			t.Errorf("ScoreFromCommand(%q) = %+v, want an error", bad, s)
		}
	}
}

func TestScoreFromValue(t *testing.T) {
	for _, tt := range []struct {
		v        cty.Value
		score    float64
		accepted bool
		err      bool
	}{
		{cty.NumberFloatVal(0.5), 0.5, true, false},
		{cty.NumberIntVal(3), 3, true, false},
		{cty.StringVal("0.25"), 0.25, true, false}, // converts, as cty does
		{cty.True, 1, true, false},
		{cty.False, 0, false, false},
		{cty.StringVal("high"), 0, false, true},
		{cty.NullVal(cty.Number), 0, false, true},
		{cty.UnknownVal(cty.Number), 0, false, true},
		{cty.PositiveInfinity, 0, false, true},
	} {
		s := ScoreFromValue(tt.v)
		if (s.Err != nil) != tt.err || !tt.err && (s.Score != tt.score || s.Accepted != tt.accepted) {
			t.Errorf("ScoreFromValue(%#v) = %+v", tt.v, s)
		}
	}
}

func TestKeyAndSystem(t *testing.T) {
	x := eval.New(func(string) (string, bool) { return "", false })
	c := &Candidate{Index: 2, Content: "  Forty-Two ", Usage: budget.Amount{TotalTokens: 9}, Elapsed: time.Second}
	bon := &plan.BestOfN{}
	if k, err := Key(x, bon, c); err != nil || k != "Forty-Two" {
		t.Errorf("Key without an expression = %q, %v; want the trimmed content", k, err)
	}
	bon.Selector.Key = &plan.Expr{Source: "lower(trimspace(candidate.content))"}
	if k, err := Key(x, bon, c); err != nil || k != "forty-two" {
		t.Errorf("Key = %q, %v", k, err)
	}
	bon.Selector.Key = &plan.Expr{Source: `{n = candidate.usage.total_tokens, s = candidate.elapsed}`}
	if k, err := Key(x, bon, c); err != nil || k != `{"n":9,"s":1}` {
		t.Errorf("a key that is not a string is its JSON: %q, %v", k, err)
	}
	bon.Selector.Key = &plan.Expr{Source: "candidate.nope"}
	if _, err := Key(x, bon, c); err == nil {
		t.Error("a key that does not evaluate gave no error")
	}

	if _, ok := System(x, bon, 0); ok {
		t.Error("a system prompt without vary.system")
	}
	bon.Vary = map[string]plan.Expr{"system": {Source: `"You are candidate ${candidate.index}."`}}
	if s, ok := System(x, bon, 3); !ok || s != "You are candidate 3." {
		t.Errorf("System = %q, %v", s, ok)
	}
}

func TestNumberAndDescribe(t *testing.T) {
	if f, err := Number(cty.StringVal("1.5")); err != nil || f != 1.5 {
		t.Errorf("Number = %v, %v", f, err)
	}
	if _, err := Number(cty.NumberFloatVal(math.Inf(1))); err == nil {
		t.Error("an infinite number passed")
	}
	if got := Describe(cty.ObjectVal(map[string]cty.Value{"a": cty.True})); got != `{"a":true}` {
		t.Errorf("Describe = %q", got)
	}
	if got := Describe(cty.NullVal(cty.String)); got != "null" {
		t.Errorf("Describe(null) = %q", got)
	}
	if got := Describe(cty.UnknownVal(cty.String)); !strings.Contains(got, "unknown") {
		t.Errorf("Describe(unknown) = %q", got)
	}
}
