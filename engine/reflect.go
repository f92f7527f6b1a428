package engine

import (
	"context"
	"fmt"

	"github.com/symbi-dev/symbi/engine/internal/reflection"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// The reflection pieces (package engine/internal/reflection), under the
// names the engine has always exported.
type (
	// ReflectionError ends a reflect_and_retry run whose answer did not
	// pass. Test for it with errors.As.
	ReflectionError = reflection.Error
	// ScoreError is an evaluator's or judge's answer from which no score in
	// [0, 1] could be read.
	ScoreError = reflection.ScoreError
)

// Reflection verdicts, as journalled in reflection_evaluated.
const (
	VerdictPass   = reflection.Pass
	VerdictRevise = reflection.Revise
	VerdictRetry  = reflection.Retry
	VerdictBlock  = reflection.Block
)

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
		actx, span := r.e.startStep(ctx, spanReflect, r.id, attrReflectAttempt.Int(attempt))
		if err := r.react(actx); err != nil {
			r.e.endStep(span, err)
			return err
		}
		answer := r.answer
		ev, evaluator, err := r.evaluate(actx, answer, cfg, attempt)
		if err != nil {
			r.e.endStep(span, err)
			return err
		}
		verdict := reflection.Verdict(ev.Score, cfg)
		r.e.endStep(span, nil, attrReflectScore.Float64(ev.Score), attrReflectVerdict.String(string(verdict)))
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
			r.conv = append(r.conv, provider.Message{Role: provider.User, Content: reflection.RevisePrompt(ev)})
		} else {
			// Start over from the task: a weak answer is a poor anchor.
			r.conv = append([]provider.Message(nil), base...)
		}
	}
}

// evaluate scores one answer: with the evaluator agent when there is one
// (a sub-run sharing this run's budget), otherwise by asking this agent's
// model to score it against the rubric. It returns the evaluation and who
// evaluated ("agent.critic" or "rubric").
func (r *run) evaluate(ctx context.Context, answer string, cfg plan.Reflect, attempt int) (reflection.Evaluation, string, error) {
	prompt := reflection.Prompt(r.input, answer, cfg.Rubric)
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
			return reflection.Evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s: %w", cfg.Evaluator, err)
		}
		if res.Termination.Reason != Completed {
			if res.Termination.Err != nil {
				return reflection.Evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s ended with %s: %w", cfg.Evaluator, res.Termination.Reason, res.Termination.Err)
			}
			return reflection.Evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s ended with %s", cfg.Evaluator, res.Termination)
		}
		ev, err := reflection.ParseScore(res.Answer, cfg.Rubric)
		if err != nil {
			return reflection.Evaluation{}, cfg.Evaluator, fmt.Errorf("evaluator %s: %w", cfg.Evaluator, err)
		}
		return ev, cfg.Evaluator, nil
	}
	msgs := []provider.Message{
		{Role: provider.System, Content: "You are a strict evaluator. You score answers against criteria and reply with JSON only."},
		{Role: provider.User, Content: prompt},
	}
	resp, err := r.reason(ctx, modelCall{msgs: msgs, json: true, quiet: true})
	if err != nil {
		return reflection.Evaluation{}, "rubric", err
	}
	ev, err := reflection.ParseScore(resp.Content, cfg.Rubric)
	if err != nil {
		return reflection.Evaluation{}, "rubric", fmt.Errorf("rubric evaluation: %w", err)
	}
	return ev, "rubric", nil
}
