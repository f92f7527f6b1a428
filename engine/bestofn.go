package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/budget"
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

// ErrUnknownBestOfN is returned for a best_of_n block the plan does not have.
var ErrUnknownBestOfN = errors.New("unknown best_of_n block")

// commandScorerTimeout bounds one run of a command scorer, inside the
// block's own timeout: the plan's command block has no timeout of its own.
const commandScorerTimeout = 60 * time.Second

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
	var ledger *bonLedger
	aggregate := plan.Budget{}
	if bon.Budget != "" {
		aggregate = e.plan.Budget(bon.Budget)
		ledger = newBonLedger(aggregate)
	} else {
		ledger = newBonLedger(plan.Budget{}) // no aggregate limits: accounting only
	}
	parentRO := ro
	parentRO.Budget = budget.New(aggregate)
	r, err := e.newRun(ctx, bon.Agent, input, parentRO)
	if err != nil {
		return nil, err
	}
	r.mode = "best_of_n"
	// Opening the journal (a file, the saved plan, their fsyncs) is the
	// slowest thing before the first model call, so it runs alongside the
	// first candidates: the runner queues their events until the journal
	// holds the started event. A journal that cannot open stops the run.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	opened := make(chan error, 1)
	go func() {
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
	}()
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
		if res, _, err := ledger.reserve(budget.Amount{}, plan.Budget{}); err == nil {
			if err := res.reconcile(usageOf(r.acct)); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	if runErr != nil {
		out.Candidates = make([]Candidate, bon.Candidates)
		for i := range out.Candidates {
			out.Candidates[i] = Candidate{Index: i, Status: StatusSkipped, Error: runErr}
		}
	} else {
		b := &bonRunner{
			cfg:  cfg,
			now:  e.opts.Now,
			vary: func(i int) (RunOptions, map[string]any, error) { return e.bonVary(exprs, bon, i, ro) },
			record: func(typ string, data any) {
				if waitOpen() == nil {
					_ = r.record(typ, data)
				}
			},
		}
		b.generate = func(ctx context.Context, i int, cro RunOptions) bonGeneration {
			return e.bonGenerate(ctx, r, exprs, bon, ledger, agentBudget, i, cro)
		}
		b.score = func(ctx context.Context, c *Candidate) bonScore {
			return e.bonScore(ctx, r, exprs, bon, ledger, input, c)
		}
		b.key = func(c *Candidate) (string, error) { return e.bonKey(exprs, bon, c) }
		o := b.run(runCtx)
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
		case o.Selected >= 0:
			out.Selected = &out.Candidates[o.Selected]
			// Candidates run quietly; the selected answer is the one shown.
			r.emitDelta(out.Selected.Content)
			r.complete(out.Selected.Content)
		case o.TimedOut:
			runErr = &bonTimeoutError{timeout: cfg.Timeout.Std()}
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
	out.Result = *r.bonFinish(ctx, runErr, ledger.usage())
	return out, nil
}

// bonFinish is finish for a best-of-N run: the usage is the ledger's, not
// an accountant's, and the iterations are the candidates'.
func (r *run) bonFinish(ctx context.Context, err error, usage budget.Amount) *Result {
	t := r.classify(ctx, ctx, err)
	var te *bonTimeoutError
	if errors.As(err, &te) {
		t = Termination{Reason: TimedOut, Limit: "timeout", Detail: err.Error(), Err: err}
	}
	return r.conclude(t, usage)
}

// bonTimeoutError ends a best-of-N run whose deadline passed before any
// candidate became eligible. It wraps ErrNoEligibleCandidate.
type bonTimeoutError struct{ timeout time.Duration }

func (e *bonTimeoutError) Error() string {
	return fmt.Sprintf("%v: the timeout (%s) passed first", ErrNoEligibleCandidate, e.timeout)
}
func (e *bonTimeoutError) Unwrap() error { return ErrNoEligibleCandidate }

// bonVary evaluates the block's vary expressions for candidate index and
// applies them to the candidate's run options. vary may set temperature,
// max_output_tokens and system (the compiler refuses other fields); any
// other field in a hand-edited plan fails the candidate.
func (e *Engine) bonVary(exprs *eval.Evaluator, bon *plan.BestOfN, index int, base RunOptions) (RunOptions, map[string]any, error) {
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
	for _, field := range bonSortedKeys(bon.Vary) {
		ex := bon.Vary[field]
		v, diags := exprs.Deferred(ex, vars)
		if diags.HasErrors() {
			return ro, applied, fmt.Errorf("vary.%s (%s): %s", field, ex.Range, diags.Error())
		}
		switch field {
		case "temperature":
			f, err := ctyNumber(v)
			if err != nil || f < 0 {
				return ro, applied, fmt.Errorf("vary.temperature (%s): want a number of at least 0, got %s", ex.Range, ctyText(v))
			}
			ro.Temperature = &f
			applied[field] = f
		case "max_output_tokens":
			f, err := ctyNumber(v)
			if err != nil || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
				return ro, applied, fmt.Errorf("vary.max_output_tokens (%s): want a whole number of at least 1, got %s", ex.Range, ctyText(v))
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

// bonGenerate runs one candidate: a full run of the agent, persisting
// nothing, under its own accountant funded by the ledger.
func (e *Engine) bonGenerate(ctx context.Context, parent *run, exprs *eval.Evaluator, bon *plan.BestOfN, ledger *bonLedger, own plan.Budget, index int, ro RunOptions) bonGeneration {
	est := budget.Amount{ModelCalls: bon.Estimate.ModelCallsPerCandidate, TotalTokens: bon.Estimate.TotalTokensPerCandidate, CostUSD: bon.Estimate.CostUSDPerCandidate}
	res, allowance, err := ledger.reserve(est, own)
	if err != nil {
		return bonGeneration{Stop: err, Termination: string(BudgetExceeded)}
	}
	ro.Budget = budget.New(allowance)
	ro.RunID = fmt.Sprintf("%s.c%d", parent.id, index)
	if bon.SideEffects == SideEffectsIsolate && parent.agent.Loop.Mode == "plan_execute" {
		res.release()
		return bonGeneration{Status: StatusSideEffectBlocked, Err: errors.New("plan execution is not allowed under side_effects = \"isolate\""), Termination: string(Failed)}
	}
	cr, err := e.newRun(ctx, parent.agent.Address, parent.input, ro)
	if err != nil {
		res.release()
		return bonGeneration{Status: StatusGenerationFailed, Err: err, Termination: string(Failed)}
	}
	cr.conv = append([]provider.Message(nil), parent.conv...) // the task, pre-hydrated once
	if sys, ok := bonSystem(exprs, bon, index); ok {
		cr.conv = replaceSystem(cr.conv, sys)
	}
	result := cr.execute(ctx)
	g := bonGeneration{Content: result.Answer, Usage: result.Usage, Termination: string(result.Termination.Reason), Iterations: result.Iterations}
	if stop := res.reconcile(result.Usage); stop != nil {
		g.Stop = stop
		return g
	}
	if why := sideEffectBlock(cr.conv, bon.SideEffects); why != "" {
		g.Status, g.Err = StatusSideEffectBlocked, errors.New(why)
		return g
	}
	t := result.Termination
	switch t.Reason {
	case Completed:
		return g
	case BudgetExceeded, MaxIterations:
		// The candidate's own accountant: the agent's limit, or the share
		// of the aggregate it was funded with.
		g.Status, g.Err = StatusBudgetExceeded, peTerminationErr(t)
	case TimedOut:
		g.Status, g.Err = StatusTimedOut, peTerminationErr(t)
	case Cancelled:
		g.Status, g.Err = StatusCancelled, peTerminationErr(t)
	default:
		g.Status, g.Err = StatusGenerationFailed, peTerminationErr(t)
	}
	return g
}

// bonSystem is the varied system prompt for candidate index, if vary sets one.
func bonSystem(exprs *eval.Evaluator, bon *plan.BestOfN, index int) (string, bool) {
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

// judgePrompt is what a judge agent is asked about one candidate; the reply
// format is documented in docs/reasoning.md.
func judgePrompt(task, content string) string {
	return "Judge one candidate answer to a task.\n\n<task>\n" + task + "\n</task>\n\n<candidate>\n" + content +
		"\n</candidate>\n\nScore how well the candidate answers the task, from 0 (wrong or useless) to 1 (correct and complete). " +
		"Set accepted to false if the candidate must not be used at all (unsafe, off-task).\n" +
		`Reply with only a JSON object: {"score": <0..1>, "accepted": <true|false>, "rationale": "<one sentence>"}`
}

// bonScore scores one candidate with the block's scorer.
func (e *Engine) bonScore(ctx context.Context, parent *run, exprs *eval.Evaluator, bon *plan.BestOfN, ledger *bonLedger, input string, c *Candidate) bonScore {
	switch bon.Scorer.Kind {
	case "judge":
		return e.bonJudge(ctx, parent, bon, ledger, input, c)
	case "expr":
		v, diags := exprs.Deferred(*bon.Scorer.Expr, map[string]cty.Value{"candidate": candidateValue(c)})
		if diags.HasErrors() {
			return bonScore{Err: fmt.Errorf("scorer expr (%s): %s", bon.Scorer.Expr.Range, diags.Error())}
		}
		return scoreFromValue(v)
	case "command":
		return e.bonCommand(ctx, bon, input, c)
	}
	// No scorer (a plan written by hand): every candidate that answered counts alike.
	return bonScore{Score: 1, Accepted: true}
}

func (e *Engine) bonJudge(ctx context.Context, parent *run, bon *plan.BestOfN, ledger *bonLedger, input string, c *Candidate) bonScore {
	judge := e.plan.Agent(bon.Scorer.Judge)
	if judge == nil {
		return bonScore{Err: fmt.Errorf("judge %s is not in the plan", bon.Scorer.Judge)}
	}
	est := budget.Amount{ModelCalls: bon.Estimate.ScorerModelCallsPerCandidate, TotalTokens: bon.Estimate.ScorerTotalTokensPerCandidate}
	res, allowance, err := ledger.reserve(est, e.plan.Budget(judge.Budget))
	if err != nil {
		return bonScore{Stop: err}
	}
	ro := RunOptions{
		Budget:      budget.New(allowance),
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
	result, err := e.Run(ctx, judge.Address, judgePrompt(input, c.Content), ro)
	if err != nil {
		res.release()
		return bonScore{Err: fmt.Errorf("judge %s: %w", judge.Address, err)}
	}
	s := bonScore{Usage: result.Usage}
	if stop := res.reconcile(result.Usage); stop != nil {
		s.Stop = stop
		return s
	}
	if result.Termination.Reason != Completed {
		s.Err = fmt.Errorf("judge %s ended with %s", judge.Address, result.Termination)
		return s
	}
	ev, err := parseScoreAnswer(result.Answer, nil)
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

// candidateValue is `candidate` in a scorer expr or selector key: index,
// content, usage {prompt_tokens, completion_tokens, total_tokens, cost_usd}
// (generation only: the scorer has not finished when these are evaluated)
// and elapsed, in seconds.
func candidateValue(c *Candidate) cty.Value {
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

// scoreFromValue reads an expr scorer's value: a number is the score (any
// finite number; minimum_score compares against it), a bool accepts (1) or
// rejects (0) the candidate.
func scoreFromValue(v cty.Value) bonScore {
	if v.IsNull() || !v.IsWhollyKnown() {
		return bonScore{Err: errors.New("scorer expr gave no value")}
	}
	if v.Type() == cty.Bool {
		if v.True() {
			return bonScore{Score: 1, Accepted: true}
		}
		return bonScore{Score: 0, Accepted: false, Rationale: "the scorer expression is false"}
	}
	f, err := ctyNumber(v)
	if err != nil {
		return bonScore{Err: fmt.Errorf("scorer expr: want a number or a bool, got %s", ctyText(v))}
	}
	return bonScore{Score: f, Accepted: true}
}

// bonKey is the majority_vote key of a candidate, as text: a string as it
// is, any other value as its JSON.
func (e *Engine) bonKey(exprs *eval.Evaluator, bon *plan.BestOfN, c *Candidate) (string, error) {
	if bon.Selector.Key == nil {
		return strings.TrimSpace(c.Content), nil
	}
	v, diags := exprs.Deferred(*bon.Selector.Key, map[string]cty.Value{"candidate": candidateValue(c)})
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

// bonCommand runs a command scorer: the candidate as JSON on stdin
// ({"index", "task", "content", "usage", "elapsed"}), a score on stdout (a
// number, or {"score", "accepted", "rationale"}). No shell; the environment
// is the block's env plus PATH; the process group is killed on timeout.
func (e *Engine) bonCommand(ctx context.Context, bon *plan.BestOfN, input string, c *Candidate) bonScore {
	spec := bon.Scorer.Command
	if spec == nil || len(spec.Argv) == 0 {
		return bonScore{Err: errors.New("command scorer has no argv")}
	}
	argv := make([]string, len(spec.Argv))
	for i, a := range spec.Argv {
		v, err := eval.String(a, e.opts.LookupEnv)
		if err != nil {
			return bonScore{Err: fmt.Errorf("command scorer argv[%d]: %w", i, err)}
		}
		if a.Deferred != nil {
			e.addSecret(v)
		}
		argv[i] = v
	}
	env := []string{}
	if p, ok := e.opts.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	for _, k := range bonSortedKeys(spec.Env) {
		v, err := eval.String(spec.Env[k], e.opts.LookupEnv)
		if err != nil {
			return bonScore{Err: fmt.Errorf("command scorer env %s: %w", k, err)}
		}
		if spec.Env[k].Deferred != nil {
			e.addSecret(v)
		}
		env = append(env, k+"="+v)
	}
	stdin, err := json.Marshal(map[string]any{
		"index": c.Index, "task": input, "content": c.Content, "elapsed": c.Elapsed.Seconds(),
		"usage": map[string]any{"prompt_tokens": c.Usage.PromptTokens, "completion_tokens": c.Usage.CompletionTokens, "total_tokens": c.Usage.TotalTokens, "cost_usd": c.Usage.CostUSD},
	})
	if err != nil {
		return bonScore{Err: err}
	}
	cctx, cancel := context.WithTimeout(ctx, commandScorerTimeout)
	defer cancel()
	prog := argv[0]
	base := absDir(e.opts.BaseDir) // absolute, so "./score.sh" never loses its "./" to Join
	if !filepath.IsAbs(prog) && strings.ContainsRune(prog, filepath.Separator) {
		prog = filepath.Join(base, prog)
	}
	cmd := exec.CommandContext(cctx, prog, argv[1:]...)
	cmd.Dir = base
	if spec.Dir != "" {
		cmd.Dir = filepath.Join(base, spec.Dir)
	}
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxScorerOutput, 4096
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return bonScore{Err: fmt.Errorf("command scorer timed out after %s", commandScorerTimeout)}
		}
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			return bonScore{Err: fmt.Errorf("command scorer: %w: %s", err, msg)}
		}
		return bonScore{Err: fmt.Errorf("command scorer: %w", err)}
	}
	return scoreFromCommand(stdout.String())
}

// scoreFromCommand reads a command scorer's output.
func scoreFromCommand(out string) bonScore {
	out = strings.TrimSpace(out)
	if strings.HasPrefix(out, "{") {
		var doc struct {
			Score     *float64 `json:"score"`
			Accepted  *bool    `json:"accepted"`
			Rationale string   `json:"rationale"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Score == nil {
			return bonScore{Err: fmt.Errorf("command scorer printed %q: want a number or {\"score\": n}", peClip(out, 200))}
		}
		s := bonScore{Score: *doc.Score, Accepted: doc.Accepted == nil || *doc.Accepted, Rationale: doc.Rationale}
		if math.IsNaN(s.Score) || math.IsInf(s.Score, 0) {
			return bonScore{Err: errors.New("command scorer printed a score that is not finite")}
		}
		return s
	}
	var f float64
	if _, err := fmt.Sscanf(out, "%g", &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(strings.TrimLeft(out, "+-.0123456789eE"), " \t\n") {
		return bonScore{Err: fmt.Errorf("command scorer printed %q: want a number", peClip(out, 200))}
	}
	return bonScore{Score: f, Accepted: true}
}

// limitedBuffer keeps the first max bytes written and drops the rest, so a
// chatty scorer cannot exhaust memory.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string { return b.buf.String() }

func ctyNumber(v cty.Value) (float64, error) {
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

func ctyText(v cty.Value) string {
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

func bonSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
