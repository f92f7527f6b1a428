package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/internal/backoff"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// RecoveryHooks connect the recovery chain to the engine.
type RecoveryHooks struct {
	// Gate decides a fallback call like any other call.
	Gate func(ctx context.Context, a policy.Action) (policy.Approved, error)
	// Escalate asks a person. approved means "run the call again"; false
	// with a nil error is a rejection, which ends the chain. An error (a
	// timeout, no one answering) passes to the next strategy.
	Escalate func(ctx context.Context, queue string, timeout time.Duration, failure error) (approved bool, err error)
	// Event reports every step, for a recovery_triggered journal event.
	Event func(strategy string, attempt int, err error)
}

// Strategy names, as in the recovery block and the journal.
const (
	StrategyRetry        = "retry"
	StrategyFallback     = "fallback"
	StrategyCachedResult = "cached_result"
	StrategyLLMRecovery  = "llm_recovery"
	StrategyEscalate     = "escalate"
	StrategyDeadLetter   = "dead_letter"
)

// Recover runs a failed call's recovery chain, strategies in the order
// written, each starting from the latest failure:
//
//   - retry: the same call again, until max_attempts attempts in all (the
//     failed one included) were made, with
//     the backoff of package backoff (at least a rate limit's Retry-After),
//     only while the failure's kind is listed in on;
//   - fallback: each alternative tool in turn, with the same arguments,
//     validated and gated like any call;
//   - cached_result: the last success for the same tool and arguments, when
//     no older than max_staleness (any age when zero);
//   - llm_recovery: ends the chain with a *Failure whose Hint asks the model
//     for another approach, at most max_attempts times per tool and
//     arguments;
//   - escalate: a person decides; approved runs the call once more, rejected
//     ends the chain, no answer in time passes on;
//   - dead_letter: appends the failure to <state_dir>/dead_letter.jsonl
//     (through Options.Redact) and ends the chain with an error observation
//     (wrapping ErrDeadLettered).
//
// Every step calls hooks.Event. When the chain runs out, the last failure is
// returned.
func (tb *Toolbox) Recover(ctx context.Context, call policy.Approved, failure error, chain plan.Recovery, hooks RecoveryHooks) (Result, error) {
	if !call.Valid() {
		return Result{}, fail(Error, "", ErrNotApproved)
	}
	name, args, err := toolCallOf(call.Action())
	if err != nil {
		return Result{}, err
	}
	event := hooks.Event
	if event == nil {
		event = func(string, int, error) {}
	}
	for _, s := range chain.Strategies {
		if ctx.Err() != nil {
			return Result{}, failure
		}
		switch {
		case s.Retry != nil:
			r, err, ok := tb.retry(ctx, call, failure, *s.Retry, event)
			if ok {
				return r, nil
			}
			failure = err
		case s.Fallback != nil:
			r, err, ok := tb.fallback(ctx, call.Action(), failure, *s.Fallback, hooks.Gate, event)
			if ok {
				return r, nil
			}
			failure = err
		case s.CachedResult != nil:
			c, ok := tb.cache.get(name, args)
			age := tb.opts.Now().Sub(c.at)
			if ok && (s.CachedResult.MaxStaleness <= 0 || age <= s.CachedResult.MaxStaleness.Std()) {
				event(StrategyCachedResult, 1, failure)
				r := c.result
				r.Cached = true
				return r, nil
			}
			if ok {
				event(StrategyCachedResult, 1, fmt.Errorf("cached result is %s old, older than max_staleness %s: %w", age.Round(time.Second), s.CachedResult.MaxStaleness, failure))
			} else {
				event(StrategyCachedResult, 1, fmt.Errorf("no cached result: %w", failure))
			}
		case s.LLMRecovery != nil:
			key := name + " " + canonicalJSON(args)
			tb.mu.Lock()
			n := tb.llmAttempts[key]
			allowed := n < max(s.LLMRecovery.MaxAttempts, 1)
			if allowed {
				tb.llmAttempts[key] = n + 1
			}
			tb.mu.Unlock()
			event(StrategyLLMRecovery, n+1, failure)
			if allowed {
				return Result{}, &Failure{
					Kind: KindOf(failure),
					Tool: name,
					Err:  failure,
					Hint: fmt.Sprintf("The call to %s failed (%s): %v. Try a different approach: other arguments, another tool, or answer without it.", name, KindOf(failure), unwrapFailure(failure)),
				}
			}
		case s.Escalate != nil:
			r, err, done := tb.escalate(ctx, call, failure, *s.Escalate, hooks.Escalate, event)
			if done {
				return r, err
			}
			failure = err
		case s.DeadLetter != nil:
			err := tb.deadLetter(name, args, failure, *s.DeadLetter)
			event(StrategyDeadLetter, 1, failure)
			if err != nil {
				return Result{}, &Failure{Kind: KindOf(failure), Tool: name, Err: fmt.Errorf("%w (and the dead-letter file could not be written: %v)", failure, err)}
			}
			return Result{}, &Failure{Kind: KindOf(failure), Tool: name, Err: fmt.Errorf("%w; %w", unwrapFailure(failure), ErrDeadLettered)}
		}
	}
	return Result{}, failure
}

// unwrapFailure is the failure's cause without the "tool: kind:" prefix, so
// wrapping it in another Failure does not repeat them.
func unwrapFailure(err error) error {
	var f *Failure
	if errors.As(err, &f) && f.Err != nil {
		return f.Err
	}
	return err
}

func (tb *Toolbox) retry(ctx context.Context, call policy.Approved, failure error, s plan.RetryStrategy, event func(string, int, error)) (Result, error, bool) {
	on := s.On
	if len(on) == 0 {
		on = plan.DefaultRetryStrategy().On
	}
	// max_attempts counts attempts in all, the failed first one included,
	// as a model's transport retry does.
	for attempt := 1; attempt < s.MaxAttempts; attempt++ {
		kind := KindOf(failure)
		if !slices.Contains(on, string(kind)) {
			event(StrategyRetry, attempt, fmt.Errorf("not retried: %s is not in on = [%s]: %w", kind, strings.Join(on, ", "), failure))
			return Result{}, failure, false
		}
		d := tb.backoff(s, attempt)
		var f *Failure
		if errors.As(failure, &f) && f.RetryAfter > d {
			d = f.RetryAfter
		}
		event(StrategyRetry, attempt, failure)
		if err := tb.opts.Sleep(ctx, d); err != nil {
			return Result{}, failure, false
		}
		r, err := tb.callApproved(ctx, call, 0)
		if err == nil {
			return r, nil, true
		}
		failure = err
	}
	return Result{}, failure, false
}

// backoff is the wait before retry number attempt, by the rule of package
// backoff: initial × multiplier^(attempt-1), spread by ±jitter, then capped
// at max_backoff.
func (tb *Toolbox) backoff(s plan.RetryStrategy, attempt int) time.Duration {
	r := rand.Float64
	if tb.opts.Jitter != nil {
		r = tb.opts.Jitter
	}
	mult := s.Multiplier
	if mult <= 0 { // a plan made without the compiler, which refuses it
		mult = plan.DefaultRetryStrategy().Multiplier
	}
	p := backoff.Policy{Initial: s.InitialBackoff.Std(), Max: s.MaxBackoff.Std(), Multiplier: mult, Jitter: s.Jitter}
	return p.Wait(attempt, r)
}

func (tb *Toolbox) fallback(ctx context.Context, orig policy.Action, failure error, s plan.FallbackStrategy, gate func(context.Context, policy.Action) (policy.Approved, error), event func(string, int, error)) (Result, error, bool) {
	for i, addr := range s.Tools {
		name := strings.TrimPrefix(addr, "tool.")
		event(StrategyFallback, i+1, fmt.Errorf("trying %s: %w", name, failure))
		e, ok := tb.entryOf(name)
		if !ok {
			failure = fail(Error, name, fmt.Errorf("fallback: %w %q", ErrUnknownTool, name))
			continue
		}
		if gate == nil {
			failure = fail(Error, name, fmt.Errorf("fallback: no gate: %w", ErrNotApproved))
			continue
		}
		a := orig
		a.Type = policy.ToolCall
		a.Tool = name
		a.Effect = e.info.Effect
		a.Tags = e.info.Tags
		if orig.Type == policy.Delegate {
			a.Arguments, _ = json.Marshal(map[string]string{"target": orig.Target, "task": orig.Task})
		}
		if err := validateArgs(e.schema, a.Arguments); err != nil {
			failure = fail(InvalidArguments, name, err)
			continue
		}
		approved, err := gate(ctx, a)
		if err != nil || !approved.Valid() {
			if err == nil {
				err = ErrNotApproved
			}
			failure = fail(Error, name, fmt.Errorf("fallback denied: %w", err))
			continue
		}
		r, err := tb.Call(ctx, approved)
		if err == nil {
			return r, nil, true
		}
		failure = err
	}
	return Result{}, failure, false
}

// escalate returns done when the chain ends here (success, or a rejection).
func (tb *Toolbox) escalate(ctx context.Context, call policy.Approved, failure error, s plan.EscalateStrategy, ask func(context.Context, string, time.Duration, error) (bool, error), event func(string, int, error)) (Result, error, bool) {
	event(StrategyEscalate, 1, failure)
	if ask == nil {
		return Result{}, failure, false
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if s.Timeout > 0 {
		// The cause tells the asker that the question's own timeout ended
		// it (nobody answered: a deny), not the run's deadline.
		actx, cancel = context.WithTimeoutCause(ctx, s.Timeout.Std(), ErrEscalationTimeout)
	}
	approved, err := ask(actx, s.Queue, s.Timeout.Std(), failure)
	cancel()
	if err != nil {
		event(StrategyEscalate, 1, fmt.Errorf("no decision from queue %q: %v; passing on: %w", s.Queue, err, failure))
		return Result{}, failure, false
	}
	if !approved {
		name, _, _ := toolCallOf(call.Action())
		return Result{}, &Failure{Kind: KindOf(failure), Tool: name, Err: fmt.Errorf("%w; %w", unwrapFailure(failure), ErrEscalationDenied)}, true
	}
	r, err := tb.callApproved(ctx, call, 0)
	if err != nil {
		return Result{}, err, false
	}
	return r, nil, true
}

// deadLetterLine is one line of the dead-letter file.
type deadLetterLine struct {
	Time      time.Time       `json:"time"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Kind      FailureKind     `json:"kind"`
	Error     string          `json:"error"`
}

func (tb *Toolbox) deadLetter(name string, args json.RawMessage, failure error, s plan.DeadLetterStrategy) error {
	dir := tb.opts.StateDir
	p := s.Path
	if p == "" {
		p = plan.DefaultDeadLetterPath
	}
	p = filepath.Join(dir, filepath.FromSlash(p))
	if len(args) == 0 || !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	// Marshalled unescaped: json.Marshal would escape the canonical
	// arguments' <, > and & again.
	line, err := marshalUnescaped(deadLetterLine{
		Time:      tb.opts.Now().UTC(),
		Tool:      name,
		Arguments: json.RawMessage(canonicalJSON(args)),
		Kind:      KindOf(failure),
		Error:     failure.Error(),
	})
	if err != nil {
		return err
	}
	if tb.opts.Redact != nil {
		line = tb.opts.Redact(line)
	}
	tb.deadMu.Lock()
	defer tb.deadMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// One write per line, so concurrent symbi processes do not interleave.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
