package reflection

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestParseScore(t *testing.T) {
	rubric := []plan.Criterion{{Name: "accuracy", Weight: 0.7}, {Name: "brevity", Weight: 0.3}}
	tests := []struct {
		name     string
		text     string
		rubric   []plan.Criterion
		score    float64
		feedback string
		accepted *bool
	}{
		{name: "single score", text: `{"score": 0.8, "feedback": "cite a source"}`, score: 0.8, feedback: "cite a source"},
		{name: "fenced with prose", text: "Sure.\n```json\n{\"score\": 0.25, \"critique\": \"wrong\"}\n```", score: 0.25, feedback: "wrong"},
		{name: "weighted rubric", text: `{"scores": {"accuracy": 1, "brevity": 0.5}, "feedback": "shorter"}`, rubric: rubric, score: 0.85, feedback: "shorter"},
		{name: "missing criterion scores zero", text: `{"scores": {"accuracy": 1}}`, rubric: rubric, score: 0.7},
		{name: "scores without rubric average", text: `{"scores": {"a": 1, "b": 0}}`, score: 0.5},
		{name: "judge accepted flag", text: `{"score": 0.9, "accepted": false, "rationale": "unsafe"}`, score: 0.9, feedback: "unsafe", accepted: new(bool)},
		{name: "bare number", text: "0.6", score: 0.6},
		{name: "percent", text: "Score: 75%", score: 0.75},
		{name: "out of ten", text: "I give it 7/10 because it is vague", score: 0.7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ParseScore(tt.text, tt.rubric)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(ev.Score-tt.score) > 1e-9 {
				t.Errorf("score = %v, want %v", ev.Score, tt.score)
			}
			if tt.feedback != "" && ev.Feedback != tt.feedback {
				t.Errorf("feedback = %q, want %q", ev.Feedback, tt.feedback)
			}
			if (tt.accepted == nil) != (ev.Accepted == nil) || tt.accepted != nil && *tt.accepted != *ev.Accepted {
				t.Errorf("accepted = %v, want %v", ev.Accepted, tt.accepted)
			}
		})
	}
	for _, bad := range []string{"no idea", `{"score": 3}`, "150%", `{"scores": {"accuracy": 2}}`} {
		var se *ScoreError
		if _, err := ParseScore(bad, rubric); !errors.As(err, &se) {
			t.Errorf("ParseScore(%q) err = %v, want *ScoreError", bad, err)
		}
	}
}

func TestVerdict(t *testing.T) {
	cfg := plan.Reflect{PassScore: 0.75, ReviseScore: 0.55, RetryScore: 0.35}
	for score, want := range map[float64]string{
		1: Pass, 0.75: Pass, 0.74: Revise, 0.55: Revise,
		0.5: Retry, 0.35: Retry, 0.34: Block, 0: Block,
	} {
		if got := Verdict(score, cfg); got != want {
			t.Errorf("verdict(%v) = %s, want %s", score, got, want)
		}
	}
}

func TestPromptNamesCriteria(t *testing.T) {
	p := Prompt("What is 6*7?", "42", []plan.Criterion{{Name: "accuracy", Weight: 0.7, Description: "is it right"}})
	for _, want := range []string{"What is 6*7?", "42", "accuracy (weight 0.7): is it right", `"scores": {"accuracy": <0..1>}`} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if p := Prompt("t", "a", nil); !strings.Contains(p, `{"score": <0..1>`) {
		t.Errorf("rubric-less prompt asks for no single score:\n%s", p)
	}
}
