package bestofn

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/engine/internal/answer"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
)

// JudgePrompt is what a judge agent is asked about one candidate; the reply
// format is documented in docs/reasoning.md.
func JudgePrompt(task, content string) string {
	return "Judge one candidate answer to a task.\n\n<task>\n" + task + "\n</task>\n\n<candidate>\n" + content +
		"\n</candidate>\n\nScore how well the candidate answers the task, from 0 (wrong or useless) to 1 (correct and complete). " +
		"Set accepted to false if the candidate must not be used at all (unsafe, off-task).\n" +
		`Reply with only a JSON object: {"score": <0..1>, "accepted": <true|false>, "rationale": "<one sentence>"}`
}

// CandidateValue is `candidate` in a scorer expr or selector key: index,
// content, usage {prompt_tokens, completion_tokens, total_tokens, cost_usd}
// (generation only: the scorer has not finished when these are evaluated)
// and elapsed, in seconds.
func CandidateValue(c *Candidate) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"index":   cty.NumberIntVal(int64(c.Index)),
		"content": cty.StringVal(c.Content),
		"usage": cty.ObjectVal(map[string]cty.Value{
			"prompt_tokens":     cty.NumberIntVal(c.Usage.PromptTokens),
			"completion_tokens": cty.NumberIntVal(c.Usage.CompletionTokens),
			"total_tokens":      cty.NumberIntVal(c.Usage.TotalTokens),
			"cost_usd":          cty.NumberFloatVal(c.Usage.CostUSD),
		}),
		"elapsed": cty.NumberFloatVal(c.Elapsed.Seconds()),
	})
}

// ScoreFromValue reads an expr scorer's value: a number is the score (any
// finite number; minimum_score compares against it), a bool accepts (1) or
// rejects (0) the candidate.
func ScoreFromValue(v cty.Value) Score {
	if v.IsNull() || !v.IsWhollyKnown() {
		return Score{Err: errors.New("scorer expr gave no value")}
	}
	if v.Type() == cty.Bool {
		if v.True() {
			return Score{Score: 1, Accepted: true}
		}
		return Score{Score: 0, Accepted: false, Rationale: "the scorer expression is false"}
	}
	f, err := Number(v)
	if err != nil {
		return Score{Err: fmt.Errorf("scorer expr: want a number or a bool, got %s", Describe(v))}
	}
	return Score{Score: f, Accepted: true}
}

// Key is the majority_vote key of a candidate, as text: a string as it
// is, any other value as its JSON.
func Key(exprs *eval.Evaluator, bon *plan.BestOfN, c *Candidate) (string, error) {
	if bon.Selector.Key == nil {
		return strings.TrimSpace(c.Content), nil
	}
	v, diags := exprs.Deferred(*bon.Selector.Key, map[string]cty.Value{"candidate": CandidateValue(c)})
	if diags.HasErrors() {
		return "", fmt.Errorf("%s: %s", bon.Selector.Key.Range, diags.Error())
	}
	if v.IsNull() || !v.IsWhollyKnown() {
		return "", fmt.Errorf("%s: the key has no value", bon.Selector.Key.Range)
	}
	if v.Type() == cty.String {
		return v.AsString(), nil
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// System is the varied system prompt for candidate index, if vary sets one.
func System(exprs *eval.Evaluator, bon *plan.BestOfN, index int) (string, bool) {
	ex, ok := bon.Vary["system"]
	if !ok {
		return "", false
	}
	vars := map[string]cty.Value{"candidate": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(int64(index))})}
	v, diags := exprs.Deferred(ex, vars)
	if diags.HasErrors() {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() || !s.IsKnown() {
		return "", false
	}
	return s.AsString(), true
}

// ScoreFromCommand reads a command scorer's output.
func ScoreFromCommand(out string) Score {
	out = strings.TrimSpace(out)
	if strings.HasPrefix(out, "{") {
		var doc struct {
			Score     *float64 `json:"score"`
			Accepted  *bool    `json:"accepted"`
			Rationale string   `json:"rationale"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Score == nil {
			return Score{Err: fmt.Errorf("command scorer printed %q: want a number or {\"score\": n}", answer.Clip(out, 200))}
		}
		s := Score{Score: *doc.Score, Accepted: doc.Accepted == nil || *doc.Accepted, Rationale: doc.Rationale}
		if math.IsNaN(s.Score) || math.IsInf(s.Score, 0) {
			return Score{Err: errors.New("command scorer printed a score that is not finite")}
		}
		return s
	}
	var f float64
	if _, err := fmt.Sscanf(out, "%g", &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(strings.TrimLeft(out, "+-.0123456789eE"), " \t\n") {
		return Score{Err: fmt.Errorf("command scorer printed %q: want a number", answer.Clip(out, 200))}
	}
	return Score{Score: f, Accepted: true}
}

// Number is v as a finite number.
func Number(v cty.Value) (float64, error) {
	n, err := convert.Convert(v, cty.Number)
	if err != nil || n.IsNull() || !n.IsKnown() {
		return 0, errors.New("not a number")
	}
	f, _ := n.AsBigFloat().Float64()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("not finite")
	}
	return f, nil
}

// Describe is v as an error message shows it: its JSON, or what it is
// when it has none.
func Describe(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	if !v.IsWhollyKnown() {
		return "an unknown value"
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return v.Type().FriendlyName()
	}
	return string(b)
}
