package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine/internal/bestofn"
	"github.com/symbi-dev/symbi/provider"
)

// CandidateRun is one best-of-N candidate's generation as a value that
// crosses to where a durable runtime runs it (Runtime.Candidate): the
// block, the task and the conversation it starts from (pre-hydrated once,
// its system message varied), the varied request fields, and the
// allowance the run reserved for it.
type CandidateRun struct {
	BestOfN         string             `json:"best_of_n"`
	Index           int                `json:"index"`
	Input           string             `json:"input"`
	Conversation    []provider.Message `json:"conversation"`
	Temperature     *float64           `json:"temperature,omitempty"`
	MaxOutputTokens int                `json:"max_output_tokens,omitempty"`
	Depth           int                `json:"depth"`
	Ancestors       []string           `json:"ancestors,omitempty"`
	RunID           string             `json:"run_id"`
	Allowance       budget.Allowance   `json:"allowance"`
}

// CandidateOutcome is how a candidate's generation ended: its answer and
// termination, its usage as reported (Usage) and as the allowance's
// accountant counted it (Stage, what the run settles its reservation
// with), and why it broke its side-effect mode, if it did.
type CandidateOutcome struct {
	Answer      string        `json:"answer,omitempty"`
	Termination CandidateEnd  `json:"termination"`
	Usage       budget.Amount `json:"usage"`
	Stage       budget.Usage  `json:"stage"`
	Iterations  int           `json:"iterations"`
	Blocked     string        `json:"blocked,omitempty"`
	result      *Result       // the local run's, with its errors as they were
}

// CandidateEnd is a candidate's Termination with its error as text.
type CandidateEnd struct {
	Reason Reason `json:"reason"`
	Limit  string `json:"limit,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Result is the candidate's run as a Result (answer, termination, usage,
// iterations).
func (o CandidateOutcome) Result() *Result {
	if o.result != nil {
		return o.result
	}
	t := Termination{Reason: o.Termination.Reason, Limit: o.Termination.Limit, Detail: o.Termination.Detail}
	if o.Termination.Error != "" {
		t.Err = errors.New(o.Termination.Error)
	}
	return &Result{Answer: o.Answer, Termination: t, Usage: o.Usage, Iterations: o.Iterations}
}

// RunCandidate generates one best-of-N candidate under its allowance: what
// Runtime.Candidate runs where it carries the candidate (a child
// workflow), on an engine built from the same plan with the same runtime
// seams. The error is non-nil only when the candidate could not start.
func (e *Engine) RunCandidate(ctx context.Context, c CandidateRun) (CandidateOutcome, error) {
	bon := e.plan.BestOfNByAddress(c.BestOfN)
	if bon == nil {
		return CandidateOutcome{}, fmt.Errorf("%w %q", ErrUnknownBestOfN, c.BestOfN)
	}
	ro := RunOptions{
		SideEffects:     bon.SideEffects,
		NoJournal:       true,
		Quiet:           true,
		Depth:           c.Depth,
		Ancestors:       c.Ancestors,
		Temperature:     c.Temperature,
		MaxOutputTokens: c.MaxOutputTokens,
		RunID:           c.RunID,
	}
	return e.runCandidate(ctx, bon.Agent, bon.SideEffects, c.Input, c.Conversation, ro, c.Allowance.Accountant(e.stageClock()...))
}

// runCandidate runs the candidate's agent from conv under acct.
func (e *Engine) runCandidate(ctx context.Context, agent, sideEffects, input string, conv []provider.Message, ro RunOptions, acct *budget.Accountant) (CandidateOutcome, error) {
	ro.Budget = acct
	cr, err := e.newRun(ctx, agent, input, ro)
	if err != nil {
		return CandidateOutcome{}, err
	}
	cr.conv = conv
	result := cr.execute(ctx)
	out := CandidateOutcome{
		Answer: result.Answer, Usage: result.Usage, Iterations: result.Iterations,
		Termination: CandidateEnd{Reason: result.Termination.Reason, Limit: result.Termination.Limit, Detail: result.Termination.Detail},
		Stage:       acct.Usage(),
		Blocked:     sideEffectBlock(cr.conv, sideEffects),
		result:      result,
	}
	if err := result.Termination.Err; err != nil {
		out.Termination.Error = err.Error()
	}
	return out, nil
}

// stageClock is the clock a stage's accountant measures its timeout with:
// the runtime's, when there is one.
func (e *Engine) stageClock() []budget.Option {
	if e.opts.Runtime != nil {
		return []budget.Option{budget.WithClock(e.opts.Now)}
	}
	return nil
}

// bestOfNRuntime is the runtime's concurrency for a best-of-N run's
// candidates, nil for the local engine.
func (e *Engine) bestOfNRuntime() *bestofn.Runtime {
	rt := e.opts.Runtime
	if rt == nil || rt.Go == nil {
		return nil
	}
	brt := &bestofn.Runtime{Go: rt.Go, WithTimeout: rt.WithTimeout, WithCancel: rt.WithCancel}
	if brt.WithTimeout == nil {
		brt.WithTimeout = context.WithTimeoutCause
	}
	if brt.WithCancel == nil {
		brt.WithCancel = context.WithCancelCause
	}
	return brt
}
