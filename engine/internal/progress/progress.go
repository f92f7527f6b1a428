package progress

import (
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/symbi-dev/symbi/plan"
)

// Verdict is what the progress tracker says after a failed step.
type Verdict string

const (
	// Continue: let the model try again.
	Continue Verdict = "continue"
	// Skip: give up on this step; tell the model not to try it again.
	Skip Verdict = "skip"
	// Abort: end the run (see StuckError).
	Abort Verdict = "abort"
	// Escalate: a person decides how to go on.
	Escalate Verdict = "escalate"
)

// Tracker detects a step that keeps failing the same way, from the
// agent's progress block. A "step" is whatever key the caller chooses: the
// loop uses the tool name, plan_execute the plan step id.
//
// Two consecutive errors at one step are "the same" when their similarity
// (see Similarity) is at least similarity_threshold. Each such repeat is
// a reattempt; a dissimilar error means the model changed its approach and
// starts the count again. When the count exceeds max_reattempts_per_step the
// tracker answers with on_limit. A max_reattempts_per_step of 0 or less turns
// the tracker off.
//
// It is safe for concurrent use: tools of one round fail concurrently.
type Tracker struct {
	cfg   plan.Progress
	mu    sync.Mutex
	steps map[string]*step
}

type step struct {
	lastTokens map[string]struct{}
	lastError  string
	reattempts int
}

// New returns a tracker for one run.
func New(cfg plan.Progress) *Tracker {
	return &Tracker{cfg: cfg, steps: map[string]*step{}}
}

// Observe records one failure at stepKey and says what to do about it.
func (t *Tracker) Observe(stepKey, errText string) Verdict {
	return t.observe(stepKey, errText, false)
}

// Repeat records a failure that says only that the step's last failure
// goes on: a call its tool's open circuit breaker refused. It is a
// reattempt of the step's last failure, whatever its text (the first
// failure when the step has none), so a breaker that opens does not hide a
// step that keeps failing.
func (t *Tracker) Repeat(stepKey, errText string) Verdict {
	return t.observe(stepKey, errText, true)
}

func (t *Tracker) observe(stepKey, errText string, repeat bool) Verdict {
	if t == nil || t.cfg.MaxReattemptsPerStep <= 0 {
		return Continue
	}
	tokens := tokenSet(errText)
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.steps[stepKey]
	if s == nil {
		t.steps[stepKey] = &step{lastTokens: tokens, lastError: errText}
		return Continue
	}
	switch {
	case repeat:
		s.reattempts++
		tokens, errText = s.lastTokens, s.lastError
	case jaccard(s.lastTokens, tokens) >= t.cfg.SimilarityThreshold:
		s.reattempts++
	default:
		s.reattempts = 0
	}
	s.lastTokens, s.lastError = tokens, errText
	if s.reattempts <= t.cfg.MaxReattemptsPerStep {
		return Continue
	}
	switch t.cfg.OnLimit {
	case "skip":
		return Skip
	case "escalate":
		return Escalate
	default: // "abort", and the fail-safe for anything the compiler let through
		return Abort
	}
}

// Succeeded forgets a step's failures: a success is progress.
func (t *Tracker) Succeeded(stepKey string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	delete(t.steps, stepKey)
	t.mu.Unlock()
}

// Stuck returns the error for a step the tracker gave up on, for the
// abort verdict (and for an escalation a person declined).
func (t *Tracker) Stuck(stepKey string) *StuckError {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := &StuckError{Step: stepKey}
	if s := t.steps[stepKey]; s != nil {
		e.Reattempts, e.LastError = s.reattempts, s.lastError
	}
	return e
}

// SkipObservation is what the model reads when a step was skipped, so it
// stops proposing the same failing call.
func SkipObservation(stepKey string) string {
	return fmt.Sprintf("[progress] %s keeps failing the same way; it has been skipped. Do not call it again: try another approach or answer with what you have.", stepKey)
}

// StuckError ends a run whose step kept failing the same way.
type StuckError struct {
	Step       string
	Reattempts int
	LastError  string
}

func (e *StuckError) Error() string {
	return fmt.Sprintf("step %s made no progress: %d similar failures in a row (last: %s)", e.Step, e.Reattempts+1, e.LastError)
}

// Similarity compares two error texts in [0, 1]: the Jaccard index of
// their token sets after normalisation (lower case, every run of digits
// masked to one "0", split at anything that is not a letter or digit). Masking
// digits makes "timeout after 1503ms" and "timeout after 2011ms", or two
// request ids, the same error; using sets makes the measure insensitive to
// word order and repeated words, which error messages vary freely. Two empty
// texts are identical.
func Similarity(a, b string) float64 {
	return jaccard(tokenSet(a), tokenSet(b))
}

func tokenSet(s string) map[string]struct{} {
	set := map[string]struct{}{}
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			set[b.String()] = struct{}{}
			b.Reset()
		}
	}
	inDigits := false
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			if !inDigits {
				b.WriteByte('0')
			}
			inDigits = true
			continue
		case unicode.IsLetter(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
		inDigits = false
	}
	flush()
	return set
}

func jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	return float64(inter) / float64(union)
}
