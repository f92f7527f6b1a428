package engine

import (
	"context"
	"fmt"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// ReflectionError ends a reflect_and_retry run whose answer did not pass:
// the evaluation blocked it (score below retry_score), or max_attempts ran
// out first. Test for it with errors.As.
type ReflectionError struct {
	Verdict  string // block, or the last verdict when attempts ran out
	Attempts int
	Score    float64 // the last attempt's score
	Feedback string
}

func (e *ReflectionError) Error() string {
	if e.Verdict == VerdictBlock {
		return fmt.Sprintf("reflection blocked the answer: score %.2f is below retry_score (attempt %d): %s", e.Score, e.Attempts, e.Feedback)
	}
	return fmt.Sprintf("reflection: no answer reached pass_score in %d attempts (last score %.2f): %s", e.Attempts, e.Score, e.Feedback)
}

// reflectAndRetry generates an answer with the react loop (tools allowed),
// has it evaluated, and then passes it, revises it with the critique, starts
// over, or blocks it. max_attempts counts the answers generated, the first
// included; each revise or retry is also one of the budget's
// max_reflection_attempts.
func (r *run) reflectAndRetry(ctx context.Context) error {
	cfg := plan.DefaultReflect() // a plan made without the compiler, which requires a reflect block
	if r.agent.Reflect != nil {
		cfg = *r.agent.Reflect
	}
	base := append([]provider.Message(nil), r.conv...)
	// Drafts are not the answer: generate quietly and show only the answer
	// that passed.
	quiet := r.ro.Quiet
	r.ro.Quiet = true
	defer func() { r.ro.Quiet = quiet }()
	for attempt := 1; ; attempt++ {
		r.answer = ""
		if err := r.react(ctx); err != nil {
			return err
		}
		answer := r.answer
		ev, evaluator, err := r.evaluate(ctx, answer, cfg, attempt)
		if err != nil {
			return err
		}
		verdict := reflectVerdict(ev.Score, cfg)
		if err := r.mustRecord(journal.ReflectionEvaluated, journal.ReflectionEvaluatedData{
			Attempt: attempt, Evaluator: evaluator, Score: ev.Score, Scores: ev.Scores, Verdict: verdict, Feedback: ev.Feedback,
		}); err != nil {
			return err
		}
		switch {
		case verdict == VerdictPass:
			r.ro.Quiet = quiet
			r.emitDelta(answer)
			r.complete(answer)
			return nil
		case verdict == VerdictBlock:
			r.answer = ""
			return &ReflectionError{Verdict: verdict, Attempts: attempt, Score: ev.Score, Feedback: ev.Feedback}
		case attempt >= max(cfg.MaxAttempts, 1):
			r.answer = ""
			return &ReflectionError{Verdict: verdict, Attempts: attempt, Score: ev.Score, Feedback: ev.Feedback}
		}
		if err := r.acct.ReflectionAttempt(); err != nil {
			r.answer = ""
			return err
		}
		if verdict == VerdictRevise {
			r.conv = append(r.conv, provider.Message{Role: provider.User, Content: revisePrompt(ev)})
		} else {
			// Start over from the task: a weak answer is a poor anchor.
			r.conv = append([]provider.Message(nil), base...)
		}
	}
}

// revisePrompt feeds the critique back for a revision.
func revisePrompt(ev evaluation) string {
	fb := ev.Feedback
	if fb == "" {
		fb = "(no details given)"
	}
	return fmt.Sprintf("An evaluator scored your answer %.2f out of 1. Feedback: %s\n\nRevise your answer to address the feedback. Reply with the complete revised answer only.", ev.Score, fb)
}

// evaluate scores one answer: with the evaluator agent when there is one
// (a sub-run sharing this run's budget), otherwise by asking this agent's
// model to score it against the rubric. It returns the evaluation and who
// evaluated ("agent.critic" or "rubric").
func (r *run) evaluate(ctx context.Context, answer string, cfg plan.Reflect, attempt int) (evaluation, string, error) {
	prompt := evaluationPrompt(r.input, answer, cfg.Rubric)
	if cfg.Evaluator != "" {
		ro := r.childOptions(r.ro.Depth + 1)
		if ev := r.e.plan.Agent(cfg.Evaluator); ev != nil && ev.Loop.Mode == "reflect_and_retry" {
			ro.Mode = "react" // an evaluator that reflects on its own evaluation would never end
		}
		if !ro.NoJournal {
			ro.RunID = fmt.Sprintf("%s.e%d", r.id, attempt)
		}
		res, err := r.subRun(ctx, cfg.Evaluator, prompt, ro)
		if err != nil {
			return evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s: %w", cfg.Evaluator, err)
		}
		if res.Termination.Reason != Completed {
			if res.Termination.Err != nil {
				return evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s ended with %s: %w", cfg.Evaluator, res.Termination.Reason, res.Termination.Err)
			}
			return evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s ended with %s", cfg.Evaluator, res.Termination)
		}
		ev, err := parseScoreAnswer(res.Answer, cfg.Rubric)
		if err != nil {
			return evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s: %w", cfg.Evaluator, err)
		}
		return ev, cfg.Evaluator, nil
	}
	msgs := []provider.Message{
		{Role: provider.System, Content: "You are a strict evaluator. You score answers against criteria and reply with JSON only."},
		{Role: provider.User, Content: prompt},
	}
	resp, err := r.reason(ctx, modelCall{msgs: msgs, json: true, quiet: true})
	if err != nil {
		return evaluation{}, "rubric", err
	}
	ev, err := parseScoreAnswer(resp.Content, cfg.Rubric)
	if err != nil {
		return evaluation{}, "rubric", fmt.Errorf("rubric evaluation: %w", err)
	}
	return ev, "rubric", nil
}
