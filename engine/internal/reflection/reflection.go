package reflection

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/symbi-dev/symbi/engine/internal/answer"
	"github.com/symbi-dev/symbi/plan"
)

// ScoreError is an evaluator's or judge's answer from which no score in
// [0, 1] could be read.
type ScoreError struct {
	Answer string
	Detail string
}

func (e *ScoreError) Error() string {
	a := e.Answer
	if len(a) > 200 {
		a = a[:200] + "…"
	}
	return fmt.Sprintf("no score in the answer (%s): %q", e.Detail, a)
}

// Evaluation is a score read from an evaluator's or judge's answer.
type Evaluation struct {
	Score    float64
	Scores   map[string]float64 // per rubric criterion, when given
	Feedback string
	// Accepted is the judge's explicit verdict, when it gave one.
	Accepted *bool
}

// ParseScore reads a score from an evaluator's or judge's answer. The
// accepted forms, tried in order:
//
//  1. a JSON object (possibly inside prose or a code fence) with
//     "scores": {"criterion": 0..1, ...} — combined by rubric weight — or
//     "score": 0..1; optional "feedback" (or "critique", "rationale") and
//     "accepted" (boolean);
//  2. a bare number: 0..1, or "N%", or "N/10", "N/100".
//
// With a rubric, a criterion the answer leaves out scores 0: an evaluator
// that skips a criterion must not raise the total.
func ParseScore(text string, rubric []plan.Criterion) (Evaluation, error) {
	if raw, ok := answer.JSONObject(text); ok {
		var doc struct {
			Score     *float64           `json:"score"`
			Scores    map[string]float64 `json:"scores"`
			Feedback  string             `json:"feedback"`
			Critique  string             `json:"critique"`
			Rationale string             `json:"rationale"`
			Accepted  *bool              `json:"accepted"`
		}
		if err := json.Unmarshal([]byte(raw), &doc); err == nil && (doc.Score != nil || len(doc.Scores) > 0) {
			ev := Evaluation{Feedback: firstNonEmpty(doc.Feedback, doc.Critique, doc.Rationale), Accepted: doc.Accepted}
			switch {
			case len(doc.Scores) > 0 && len(rubric) > 0:
				ev.Scores = map[string]float64{}
				for _, c := range rubric {
					s := doc.Scores[c.Name]
					if !inUnit(s) {
						return Evaluation{}, &ScoreError{Answer: text, Detail: fmt.Sprintf("criterion %s scored %v, outside 0..1", c.Name, s)}
					}
					ev.Scores[c.Name] = s
				}
				ev.Score = weightedScore(ev.Scores, rubric)
			case doc.Score != nil:
				ev.Score = *doc.Score
				if len(doc.Scores) > 0 {
					ev.Scores = doc.Scores
				}
			default: // per-criterion scores without a rubric: their mean
				ev.Scores = doc.Scores
				sum := 0.0
				for _, s := range doc.Scores {
					sum += s
				}
				ev.Score = sum / float64(len(doc.Scores))
			}
			if !inUnit(ev.Score) {
				return Evaluation{}, &ScoreError{Answer: text, Detail: fmt.Sprintf("score %v is outside 0..1", ev.Score)}
			}
			return ev, nil
		}
	}
	m := bareScore().FindStringSubmatch(text)
	if m == nil {
		return Evaluation{}, &ScoreError{Answer: text, Detail: `want {"score": 0..1} or a number`}
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return Evaluation{}, &ScoreError{Answer: text, Detail: err.Error()}
	}
	switch {
	case m[2] == "%":
		v /= 100
	case m[2] != "":
		d, _ := strconv.ParseFloat(strings.TrimPrefix(m[2], "/"), 64)
		v /= d
	}
	if !inUnit(v) {
		return Evaluation{}, &ScoreError{Answer: text, Detail: fmt.Sprintf("score %v is outside 0..1", v)}
	}
	return Evaluation{Score: v, Feedback: strings.TrimSpace(bareScore().ReplaceAllString(text, ""))}, nil
}

// bareScore finds the first number, with an optional scale. It compiles on
// first use: every symbi command links this package, and few runs reflect.
var bareScore = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(\d+(?:\.\d+)?|\.\d+)\s*(%|/\s*10\b|/\s*100\b)?`)
})

// weightedScore combines per-criterion scores by weight; all-zero weights
// count every criterion alike.
func weightedScore(scores map[string]float64, rubric []plan.Criterion) float64 {
	var sum, wsum float64
	for _, c := range rubric {
		w := c.Weight
		if w < 0 || math.IsNaN(w) {
			w = 0
		}
		sum += w * scores[c.Name]
		wsum += w
	}
	if wsum == 0 {
		for _, c := range rubric {
			sum += scores[c.Name]
		}
		return sum / float64(len(rubric))
	}
	return sum / wsum
}

func inUnit(v float64) bool { return v >= 0 && v <= 1 && !math.IsNaN(v) }

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// Error ends a reflect_and_retry run whose answer did not pass: the
// evaluation blocked it (score below retry_score), or max_attempts ran out
// first. Test for it with errors.As.
type Error struct {
	Verdict  string // block, or the last verdict when attempts ran out
	Attempts int
	Score    float64 // the last attempt's score
	Feedback string
}

func (e *Error) Error() string {
	if e.Verdict == Block {
		return fmt.Sprintf("reflection blocked the answer: score %.2f is below retry_score (attempt %d): %s", e.Score, e.Attempts, e.Feedback)
	}
	return fmt.Sprintf("reflection: no answer reached pass_score in %d attempts (last score %.2f): %s", e.Attempts, e.Score, e.Feedback)
}

// RevisePrompt feeds the critique back for a revision.
func RevisePrompt(ev Evaluation) string {
	fb := ev.Feedback
	if fb == "" {
		fb = "(no details given)"
	}
	return fmt.Sprintf("An evaluator scored your answer %.2f out of 1. Feedback: %s\n\nRevise your answer to address the feedback. Reply with the complete revised answer only.", ev.Score, fb)
}

// Reflection verdicts, as journalled in reflection_evaluated.
const (
	Pass   = "pass"
	Revise = "revise"
	Retry  = "retry"
	Block  = "block"
)

// Verdict maps a score to what reflect_and_retry does next.
func Verdict(score float64, cfg plan.Reflect) string {
	switch {
	case score >= cfg.PassScore:
		return Pass
	case score >= cfg.ReviseScore:
		return Revise
	case score >= cfg.RetryScore:
		return Retry
	}
	return Block
}

// Prompt is what the evaluator (an agent, or the main model
// scoring against the rubric) is asked. The reply format is fixed here and in
// docs/reasoning.md.
func Prompt(task, answer string, rubric []plan.Criterion) string {
	var b strings.Builder
	b.WriteString("Evaluate an answer to a task.\n\n<task>\n")
	b.WriteString(task)
	b.WriteString("\n</task>\n\n<answer>\n")
	b.WriteString(answer)
	b.WriteString("\n</answer>\n\n")
	if len(rubric) == 0 {
		b.WriteString("Score the answer's overall quality from 0 (useless) to 1 (excellent).\n")
		b.WriteString(`Reply with only a JSON object: {"score": <0..1>, "feedback": "<what to improve>"}`)
		return b.String()
	}
	b.WriteString("Score the answer from 0 (fails) to 1 (fully meets) on each criterion:\n")
	example := make([]string, len(rubric))
	for i, c := range rubric {
		fmt.Fprintf(&b, "- %s (weight %g)", c.Name, c.Weight)
		if c.Description != "" {
			b.WriteString(": " + c.Description)
		}
		b.WriteByte('\n')
		example[i] = fmt.Sprintf("%q: <0..1>", c.Name)
	}
	fmt.Fprintf(&b, `Reply with only a JSON object: {"scores": {%s}, "feedback": "<what to improve>"}`, strings.Join(example, ", "))
	return b.String()
}
