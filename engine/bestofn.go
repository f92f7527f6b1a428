package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/engine/internal/bestofn"
	"github.com/symbi-dev/symbi/engine/internal/reflection"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// BestOfNResult is a best-of-N run: the embedded Result is the run as a
// whole (Answer is the selected candidate's content, Usage the aggregate of
// generation and scoring, Termination how it ended), and Candidates every
// candidate in index order.
type BestOfNResult struct {
	Result
	BestOfN    string // the best_of_n address
	Selected   *Candidate
	Candidates []Candidate
}

// The best-of-N pieces (package engine/internal/bestofn), under the names
// the engine has always exported.
type (
	// Candidate is one best-of-N candidate, reported in index order.
	Candidate = bestofn.Candidate
	// CandidateStatus says how far one best-of-N candidate got.
	CandidateStatus = bestofn.Status
)

// The candidate statuses (see package bestofn for each).
const (
	StatusEligible          = bestofn.Eligible
	StatusRejected          = bestofn.Rejected
	StatusGenerationFailed  = bestofn.GenerationFailed
	StatusScoringFailed     = bestofn.ScoringFailed
	StatusBudgetExceeded    = bestofn.BudgetExceeded
	StatusSideEffectBlocked = bestofn.SideEffectBlocked
	StatusCancelled         = bestofn.Cancelled
	StatusTimedOut          = bestofn.TimedOut
	StatusSkipped           = bestofn.Skipped
)

// ErrNoEligibleCandidate is returned when every candidate was rejected or failed.
var ErrNoEligibleCandidate = bestofn.ErrNoEligibleCandidate

// ErrUnknownBestOfN is returned for a best_of_n block the plan does not have.
var ErrUnknownBestOfN = errors.New("unknown best_of_n block")

// maxScorerOutput caps what a command scorer may print.
const maxScorerOutput = 64 << 10

// RunBestOfN runs a best_of_n block and returns the run as a Result (see
// BestOfN for the candidates). `symbi run --best-of NAME` calls it.
func (e *Engine) RunBestOfN(ctx context.Context, addr, input string, ro RunOptions) (*Result, error) {
	res, err := e.BestOfN(ctx, addr, input, ro)
	if res == nil {
		return nil, err
	}
	return &res.Result, err
}

// BestOfN runs a best_of_n block ("answer" or "best_of_n.answer"): N
// candidates, each a full run of the agent with the varied request fields,
// max_concurrency at a time, under the block's timeout; each scored as it
// finishes; then selected. Candidates persist nothing: they have no journal
// of their own and write no knowledge; their candidate_* events and the
// selected answer go to this run's journal. The error is non-nil only when
// the run could not start.
func (e *Engine) BestOfN(ctx context.Context, addr, input string, ro RunOptions) (*BestOfNResult, error) {
	if !strings.HasPrefix(addr, "best_of_n.") {
		addr = "best_of_n." + addr
	}
	bon := e.plan.BestOfNByAddress(addr)
	if bon == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownBestOfN, strings.TrimPrefix(addr, "best_of_n."))
	}
	agentBudget := e.plan.Budget(e.plan.Agent(bon.Agent).Budget)
	exprs := eval.New(e.opts.LookupEnv)
	aggregate := plan.Budget{} // without a budget: no aggregate limit, the usage still added up
	if bon.Budget != "" {
		aggregate = e.plan.Budget(bon.Budget)
	}
	// One accountant is the aggregate budget: every stage (a candidate's
	// generation, its judging) reserves from it and runs under its own
	// accountant funded by it (ReserveStage, Reservation.Stage), and what
	// the run does itself (pre-hydration, a command selector) counts on it
	// directly. Its timeout is the block's deadline (cfg below), which ends
	// the candidates running rather than refusing the next stage.
	counted := aggregate
	counted.Timeout = 0
	parentRO := ro
	if e.opts.Runtime != nil {
		parentRO.Budget = budget.New(counted, budget.WithClock(e.opts.Now))
	} else {
		parentRO.Budget = budget.New(counted)
	}
	r, err := e.newRun(ctx, bon.Agent, input, parentRO)
	if err != nil {
		return nil, err
	}
	r.mode = "best_of_n"
	// Opening the journal (a file, the saved plan, their fsyncs) is the
	// slowest thing before the first model call, so it runs alongside the
	// first candidates: the runner queues their events until the journal
	// holds the started event. A journal that cannot open stops the run.
	runCtx, stopRun := context.WithCancel(r.traced(ctx))
	defer stopRun()
	opened := make(chan error, 1)
	open := func() {
		err := r.open(false)
		if err == nil {
			limits := journal.BudgetInfo(policy.BudgetLimits(aggregate))
			// A journal without its started event cannot be resumed or
			// listed: treat it like one that cannot open.
			err = r.record(journal.Started, startedData{
				StartedData: journal.StartedData{
					Agent: r.agent.Address, BestOfN: bon.Address, Mode: r.mode, Input: input,
					SourceHash: e.plan.SourceHash, Budget: &limits,
					JournalFormat: journal.FormatVersion, PlanDigest: e.planDigestOf(),
					TraceID: r.traceID(),
				},
				Depth: ro.Depth, Ancestors: ro.Ancestors, BaseDir: absDir(e.opts.BaseDir),
			})
		}
		if err != nil {
			if r.jw != nil {
				r.jw.Close()
				r.jw = nil
			}
			stopRun()
		}
		opened <- err
	}
	if e.opts.Runtime != nil {
		// A runtime's run writes no journal, and its events must come in
		// an order a replay repeats: the started event first.
		open()
	} else {
		go open()
	}
	var (
		openOnce sync.Once
		openErr  error
	)
	waitOpen := func() error {
		openOnce.Do(func() { openErr = <-opened })
		return openErr
	}
	out := &BestOfNResult{BestOfN: bon.Address}

	cfg := *bon
	if d := aggregate.Timeout; d > 0 && (cfg.Timeout <= 0 || d < cfg.Timeout) {
		cfg.Timeout = d // the aggregate budget's timeout is one more deadline on the same run
	}
	var runErr error
	if bon.Budget != "" {
		runErr = budget.PreflightBestOfN(aggregate, bon.Estimate, bon.Candidates)
	}
	r.conv = r.initialConversation()
	if runErr == nil && r.agent.PreHydrate != nil {
		// References are resolved once for every candidate, in this run's
		// journal. Resolvers may read but not write, unless the block allows
		// side effects.
		if err := waitOpen(); err != nil {
			return nil, err
		}
		sideEffects := r.ro.SideEffects
		if bon.SideEffects != SideEffectsAllow {
			r.ro.SideEffects = SideEffectsReadOnly
		}
		runErr = r.prehydrate(runCtx)
		r.ro.SideEffects = sideEffects
	}
	if runErr != nil {
		out.Candidates = make([]Candidate, bon.Candidates)
		for i := range out.Candidates {
			out.Candidates[i] = Candidate{Index: i, Status: StatusSkipped, Error: runErr}
		}
	} else {
		b := &bestofn.Runner[RunOptions]{
			Runtime: e.bestOfNRuntime(),
			Config:  cfg,
			Now:     e.opts.Now,
			Vary:    func(i int) (RunOptions, map[string]any, error) { return e.varyOptions(exprs, bon, i, ro) },
			Record: func(typ string, data any) {
				if waitOpen() == nil {
					_ = r.record(typ, data)
				}
			},
		}
		b.Generate = func(ctx context.Context, i int, cro RunOptions) bestofn.Generation {
			return e.generateCandidate(ctx, r, exprs, bon, agentBudget, i, cro)
		}
		b.Score = func(ctx context.Context, c *Candidate) bestofn.Score {
			if bon.Scorer.Kind == "command" {
				// Its call is journalled in this run, as the selector's.
				if err := waitOpen(); err != nil {
					return bestofn.Score{Stop: err}
				}
			}
			return e.scoreCandidate(ctx, r, exprs, bon, input, c)
		}
		b.Key = func(c *Candidate) (string, error) { return bestofn.Key(exprs, bon, c) }
		if bon.Selector.Kind == "command" {
			b.Choose = func(ctx context.Context, cs []Candidate) (bestofn.Choice, error) {
				if err := waitOpen(); err != nil {
					return bestofn.Choice{}, err
				}
				return e.commandSelect(ctx, r, bon, input, cs)
			}
		}
		o := b.Run(runCtx)
		if err := waitOpen(); err != nil {
			return nil, err
		}
		out.Candidates = o.Candidates
		for _, c := range o.Candidates {
			r.iter += c.Iterations
		}
		switch {
		case o.Stop != nil:
			runErr = o.Stop
		case o.SelectErr != nil:
			runErr = o.SelectErr
		case o.Selected >= 0:
			out.Selected = &out.Candidates[o.Selected]
			if r.span != nil {
				r.span.AddEvent(eventSelected, trace.WithAttributes(attrCandidateIndex.Int(o.Selected), attrCandidateScore.Float64(out.Selected.Score)))
				r.span.SetAttributes(attrSelected.Int(o.Selected))
			}
			// Candidates run quietly; the selected answer is the one shown.
			r.emitDelta(out.Selected.Content)
			r.complete(out.Selected.Content)
		case o.TimedOut:
			runErr = &bestOfNTimeoutError{timeout: cfg.Timeout.Std()}
		default:
			runErr = ErrNoEligibleCandidate
		}
	}
	if err := waitOpen(); err != nil {
		return nil, err
	}
	if runErr == nil {
		// As for a single run: an answer the agent was to remember and
		// could not is a failed run, in the journal as in the result.
		runErr = r.persistKnowledge(ctx)
	}
	out.Result = *r.finishBestOfN(ctx, runErr, usageOf(r.acct))
	return out, nil
}

// finishBestOfN is finish for a best-of-N run: the usage is the aggregate
// accountant's (every stage, pre-hydration, the selector), and the
// iterations are the candidates'.
func (r *run) finishBestOfN(ctx context.Context, err error, usage budget.Amount) *Result {
	t := r.classify(ctx, ctx, err)
	var te *bestOfNTimeoutError
	if errors.As(err, &te) {
		t = Termination{Reason: TimedOut, Limit: "timeout", Detail: err.Error(), Err: err}
	}
	return r.conclude(t, usage)
}

// bestOfNTimeoutError ends a best-of-N run whose deadline passed before any
// candidate became eligible. It wraps ErrNoEligibleCandidate.
type bestOfNTimeoutError struct{ timeout time.Duration }

func (e *bestOfNTimeoutError) Error() string {
	return fmt.Sprintf("%v: the timeout (%s) passed first", ErrNoEligibleCandidate, e.timeout)
}
func (e *bestOfNTimeoutError) Unwrap() error { return ErrNoEligibleCandidate }

// varyOptions evaluates the block's vary expressions for candidate index and
// applies them to the candidate's run options. vary may set temperature,
// max_output_tokens and system (the compiler refuses other fields); any
// other field in a hand-edited plan fails the candidate.
func (e *Engine) varyOptions(exprs *eval.Evaluator, bon *plan.BestOfN, index int, base RunOptions) (RunOptions, map[string]any, error) {
	ro := RunOptions{
		SideEffects: bon.SideEffects,
		NoJournal:   true,
		Quiet:       true,
		Depth:       base.Depth + 1,
		// The agent among its own ancestors marks the candidate as part of
		// the best-of-N run: the run pre-hydrates once and persists the
		// selected answer; candidates do neither.
		Ancestors:       append(append([]string(nil), base.Ancestors...), bon.Agent),
		Temperature:     base.Temperature,
		MaxOutputTokens: base.MaxOutputTokens,
	}
	applied := map[string]any{}
	vars := map[string]cty.Value{"candidate": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(int64(index))})}
	for _, field := range sortedKeys(bon.Vary) {
		ex := bon.Vary[field]
		v, diags := exprs.Deferred(ex, vars)
		if diags.HasErrors() {
			return ro, applied, fmt.Errorf("vary.%s (%s): %s", field, ex.Range, diags.Error())
		}
		switch field {
		case "temperature":
			f, err := bestofn.Number(v)
			if err != nil || f < 0 {
				return ro, applied, fmt.Errorf("vary.temperature (%s): want a number of at least 0, got %s", ex.Range, bestofn.Describe(v))
			}
			ro.Temperature = &f
			applied[field] = f
		case "max_output_tokens":
			f, err := bestofn.Number(v)
			if err != nil || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
				return ro, applied, fmt.Errorf("vary.max_output_tokens (%s): want a whole number of at least 1, got %s", ex.Range, bestofn.Describe(v))
			}
			ro.MaxOutputTokens = int(f)
			applied[field] = int(f)
		case "system":
			s, err := convert.Convert(v, cty.String)
			if err != nil || s.IsNull() || !s.IsKnown() {
				return ro, applied, fmt.Errorf("vary.system (%s): want a string", ex.Range)
			}
			applied[field] = s.AsString()
		default:
			return ro, applied, fmt.Errorf("vary.%s (%s): this engine cannot vary %s (it varies temperature, max_output_tokens and system)", field, ex.Range, field)
		}
	}
	return ro, applied, nil
}

// generateCandidate runs one candidate: a full run of the agent, persisting
// nothing, under its own accountant funded by the aggregate (parent.acct):
// its agent's budget, each limit lowered to what the aggregate has left that
// other stages do not hold.
func (e *Engine) generateCandidate(ctx context.Context, parent *run, exprs *eval.Evaluator, bon *plan.BestOfN, own plan.Budget, index int, ro RunOptions) (g bestofn.Generation) {
	ctx, span := e.startStep(ctx, spanCandidate+" "+strconv.Itoa(index), parent.id, attrCandidateIndex.Int(index))
	defer func() {
		err := g.Err
		if err == nil {
			err = g.Stop
		}
		status := string(g.Status)
		if status == "" {
			status = "generated"
		}
		e.endStep(span, err, attrCandidateStatus.String(status))
	}()
	// A run takes at least one iteration: a candidate the aggregate has no
	// iteration left for is refused before it starts.
	est := budget.Usage{Iterations: 1, ModelCalls: bon.Estimate.ModelCallsPerCandidate, TotalTokens: bon.Estimate.TotalTokensPerCandidate, CostUSD: bon.Estimate.CostUSDPerCandidate}
	res, err := parent.acct.ReserveStage(est)
	if err != nil {
		return bestofn.Generation{Stop: err, Termination: string(BudgetExceeded)}
	}
	ro.RunID = fmt.Sprintf("%s.c%d", parent.id, index)
	if bon.SideEffects == SideEffectsIsolate && parent.agent.Loop.Mode == "plan_execute" {
		res.Release()
		return bestofn.Generation{Status: StatusSideEffectBlocked, Err: errors.New("plan execution is not allowed under side_effects = \"isolate\""), Termination: string(Failed)}
	}
	conv := append([]provider.Message(nil), parent.conv...) // the task, pre-hydrated once
	if sys, ok := bestofn.System(exprs, bon, index); ok {
		conv = replaceSystem(conv, sys)
	}
	var out CandidateOutcome
	if rt := e.opts.Runtime; rt != nil && rt.Candidate != nil {
		// Elsewhere (a child workflow), under what the reservation allows now.
		out, err = rt.Candidate(ctx, CandidateRun{
			BestOfN: bon.Address, Index: index, Input: parent.input, Conversation: conv,
			Temperature: ro.Temperature, MaxOutputTokens: ro.MaxOutputTokens,
			Depth: ro.Depth, Ancestors: ro.Ancestors, RunID: ro.RunID,
			Allowance: res.Allowance(own),
		})
	} else {
		out, err = e.runCandidate(ctx, parent.agent.Address, bon.SideEffects, parent.input, conv, ro, res.Stage(own, e.stageClock()...))
	}
	if err != nil {
		res.Release()
		return bestofn.Generation{Status: StatusGenerationFailed, Err: err, Termination: string(Failed)}
	}
	result := out.Result()
	g = bestofn.Generation{Content: result.Answer, Usage: result.Usage, Termination: string(result.Termination.Reason), Iterations: result.Iterations}
	if stop := res.Settle(out.Stage); stop != nil {
		g.Stop = stop
		return g
	}
	if out.Blocked != "" {
		g.Status, g.Err = StatusSideEffectBlocked, errors.New(out.Blocked)
		return g
	}
	t := result.Termination
	switch t.Reason {
	case Completed:
		return g
	case BudgetExceeded, MaxIterations:
		// The candidate's own accountant: the agent's limit, or the share
		// of the aggregate it was funded with.
		g.Status, g.Err = StatusBudgetExceeded, terminationErr(t)
	case TimedOut:
		g.Status, g.Err = StatusTimedOut, terminationErr(t)
	case Cancelled:
		g.Status, g.Err = StatusCancelled, terminationErr(t)
	default:
		g.Status, g.Err = StatusGenerationFailed, terminationErr(t)
	}
	return g
}

func replaceSystem(conv []provider.Message, sys string) []provider.Message {
	if len(conv) > 0 && conv[0].Role == provider.System {
		conv[0].Content = sys
		return conv
	}
	return append([]provider.Message{{Role: provider.System, Content: sys}}, conv...)
}

// sideEffectsBlockedPrefix starts the observation the gate gives a call
// that the run's side-effect mode forbids.
const sideEffectsBlockedPrefix = "[side effects blocked]"

// sideEffectBlock says why a candidate broke its side-effect mode: under
// isolate, any proposed tool call or delegation (per Wuwe, a candidate that
// reaches for a tool is not isolated, even though the gate refused the call);
// under read_only, a call the gate refused as a write.
func sideEffectBlock(conv []provider.Message, mode string) string {
	for _, m := range conv {
		switch {
		case mode == SideEffectsIsolate && m.Role == provider.Assistant && len(m.ToolCalls) > 0:
			return fmt.Sprintf("proposed a call to %s under side_effects = \"isolate\"", m.ToolCalls[0].Name)
		case m.Role == provider.ToolRole && strings.HasPrefix(m.Content, sideEffectsBlockedPrefix):
			return strings.TrimSpace(strings.TrimPrefix(m.Content, sideEffectsBlockedPrefix))
		}
	}
	return ""
}

// scoreCandidate scores one candidate with the block's scorer.
func (e *Engine) scoreCandidate(ctx context.Context, parent *run, exprs *eval.Evaluator, bon *plan.BestOfN, input string, c *Candidate) (s bestofn.Score) {
	ctx, span := e.startStep(ctx, spanScore+" "+strconv.Itoa(c.Index), parent.id, attrCandidateIndex.Int(c.Index))
	defer func() {
		err := s.Err
		if err == nil {
			err = s.Stop
		}
		e.endStep(span, err, attrCandidateScore.Float64(s.Score))
	}()
	switch bon.Scorer.Kind {
	case "judge":
		return e.judgeCandidate(ctx, parent, bon, input, c)
	case "expr":
		v, diags := exprs.Deferred(*bon.Scorer.Expr, map[string]cty.Value{"candidate": bestofn.CandidateValue(c)})
		if diags.HasErrors() {
			return bestofn.Score{Err: fmt.Errorf("scorer expr (%s): %s", bon.Scorer.Expr.Range, diags.Error())}
		}
		return bestofn.ScoreFromValue(v)
	case "command":
		return e.commandScore(ctx, parent, bon, input, c)
	}
	// No scorer (a plan written by hand): every candidate that answered counts alike.
	return bestofn.Score{Score: 1, Accepted: true}
}

func (e *Engine) judgeCandidate(ctx context.Context, parent *run, bon *plan.BestOfN, input string, c *Candidate) bestofn.Score {
	judge := e.plan.Agent(bon.Scorer.Judge)
	if judge == nil {
		return bestofn.Score{Err: fmt.Errorf("judge %s is not in the plan", bon.Scorer.Judge)}
	}
	est := budget.Usage{Iterations: 1, ModelCalls: bon.Estimate.ScorerModelCallsPerCandidate, TotalTokens: bon.Estimate.ScorerTotalTokensPerCandidate, CostUSD: bon.Estimate.ScorerCostUSDPerCandidate}
	res, err := parent.acct.ReserveStage(est)
	if err != nil {
		return bestofn.Score{Stop: err}
	}
	acct := res.Stage(e.plan.Budget(judge.Budget), e.stageClock()...)
	ro := RunOptions{
		Budget:      acct,
		NoJournal:   true,
		Quiet:       true,
		SideEffects: bon.SideEffects,
		Depth:       parent.ro.Depth + 1,
		Ancestors:   parent.ro.Ancestors,
		RunID:       fmt.Sprintf("%s.j%d", parent.id, c.Index),
	}
	if judge.Loop.Mode == "reflect_and_retry" || judge.Loop.Mode == "plan_execute" {
		ro.Mode = "simple" // a judge answers once; it does not plan or reflect per candidate
	}
	result, err := e.Run(ctx, judge.Address, bestofn.JudgePrompt(input, c.Content), ro)
	if err != nil {
		res.Release()
		return bestofn.Score{Err: fmt.Errorf("judge %s: %w", judge.Address, err)}
	}
	s := bestofn.Score{Usage: result.Usage}
	if stop := res.Settle(acct.Usage()); stop != nil {
		s.Stop = stop
		return s
	}
	if result.Termination.Reason != Completed {
		s.Err = fmt.Errorf("judge %s ended with %s", judge.Address, result.Termination)
		return s
	}
	ev, err := reflection.ParseScore(result.Answer, nil)
	if err != nil {
		s.Err = fmt.Errorf("judge %s: %w", judge.Address, err)
		return s
	}
	s.Score, s.Rationale, s.Accepted = ev.Score, ev.Feedback, true
	if ev.Accepted != nil {
		s.Accepted = *ev.Accepted
	}
	return s
}

// commandScore runs a command scorer for one candidate: a tool call of the
// tool named after the block with ".scorer" (best_of_n.answer.scorer),
// gated, counted and journalled in the parent run as the command selector
// is (callBlockTool), with the candidate as its arguments and on its stdin
// ({"index", "task", "content", "usage", "elapsed"}); on stdout a score (a
// number, or {"score", "accepted", "rationale"}). A denial stops the whole
// block (policy_denial), as it would for the selector; any other failure
// fails this candidate's scoring.
func (e *Engine) commandScore(ctx context.Context, r *run, bon *plan.BestOfN, input string, c *Candidate) bestofn.Score {
	tools, err := e.scorerTools(ctx, bon)
	if err != nil {
		return bestofn.Score{Err: err}
	}
	args, err := json.Marshal(map[string]any{
		"index": c.Index, "task": input, "content": c.Content, "elapsed": c.Elapsed.Seconds(),
		"usage": map[string]any{"prompt_tokens": c.Usage.PromptTokens, "completion_tokens": c.Usage.CompletionTokens, "total_tokens": c.Usage.TotalTokens, "cost_usd": c.Usage.CostUSD},
	})
	if err != nil {
		return bestofn.Score{Err: err}
	}
	name := bon.Address + scorerSuffix
	res, failed, err := r.callBlockTool(ctx, tools, name, fmt.Sprintf("score-%d", c.Index), args)
	switch {
	case err != nil:
		return bestofn.Score{Stop: err}
	case failed != nil:
		return bestofn.Score{Err: fmt.Errorf("command scorer %w", failed)}
	case res.Truncated:
		return bestofn.Score{Err: fmt.Errorf("command scorer %s printed more than %d bytes", name, maxScorerOutput)}
	}
	return bestofn.ScoreFromCommand(res.Content)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
