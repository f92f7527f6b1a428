package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/convo"
	"github.com/symbi-dev/symbi/engine/internal/estimate"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/anthropic"
	"github.com/symbi-dev/symbi/provider/openai"
	"github.com/symbi-dev/symbi/provider/scripted"
	"github.com/symbi-dev/symbi/routing"
	"github.com/symbi-dev/symbi/stdlib"
)

// modelCall is one request a mode wants to make; reason fills in the rest
// from the agent and the run options.
type modelCall struct {
	msgs []provider.Message // the whole conversation; reason fits it
	// fitted says msgs already fit the context settings (the react loop
	// fits r.conv itself, and Fit is most of a step's own CPU).
	fitted bool
	// msgTokens is estimate.Messages(msgs) when known (the react loop keeps
	// it per message in r.tokens); 0: estimate them.
	msgTokens int64
	tools     []provider.ToolSpec
	// toolTokens is the estimate of tools when known (the agent's specs,
	// estimated once); 0: estimate them.
	toolTokens int64
	toolChoice string
	json       bool
	// quiet keeps this call's deltas off the terminal (evaluations, plans).
	quiet bool
	// temperature and maxOutput replace the run's, when set.
	temperature *float64
	maxOutput   int
}

// reason makes one model call: route, fit the context, reserve the budget
// (capping max_output_tokens), write the call ahead, stream, reconcile,
// journal. When the turn arrived but its usage passed a limit, it returns
// the turn with the budget error; on every other error the response is
// empty. The model_call_started line goes out with every line held
// before it, in one write, before the request; the turn's own line is held
// (see hold).
func (r *run) reason(ctx context.Context, c modelCall) (provider.Response, error) {
	msgs := c.msgs
	if !c.fitted {
		msgs = convo.Fit(msgs, r.agent.Context)
	}
	est := c.msgTokens
	if est == 0 {
		est = estimate.Messages(msgs)
	}
	if c.toolTokens > 0 {
		est += c.toolTokens
	} else {
		est += estimate.Tools(c.tools)
	}
	maxOut := c.maxOutput
	if maxOut == 0 {
		maxOut = r.ro.MaxOutputTokens
	}
	if maxOut == 0 {
		maxOut = r.agent.Loop.MaxOutputTokens
	}
	// The router prices the output estimate the reservation will hold
	// (estimated_output_tokens_per_call), not the cap it is sent with.
	m, spec, err := r.pickModel(ctx, c, est, r.acct.OutputEstimate(maxOut))
	if err != nil {
		return provider.Response{}, err
	}
	res, capped, err := r.acct.ReserveModelCall(est, maxOut, spec.Pricing)
	if err != nil {
		return provider.Response{}, err
	}
	if err := r.writeAhead(spec, res.Estimate()); err != nil {
		res.Release()
		return provider.Response{}, err
	}
	temp := c.temperature
	if temp == nil {
		temp = r.ro.Temperature
	}
	if temp == nil {
		temp = r.agent.Loop.Temperature
	}
	// A tool's output, the input or an earlier answer may hold a secret:
	// the provider gets the conversation as the journal has it.
	msgs = r.requests.Messages(&r.e.secrets, msgs)
	req := provider.Request{
		Model:           spec.Name,
		Messages:        msgs,
		Tools:           c.tools,
		ToolChoice:      c.toolChoice,
		Temperature:     temp,
		MaxOutputTokens: capped,
		JSON:            c.json,
	}
	start := r.e.opts.Now()
	quiet := c.quiet || r.holdAnswer
	cctx, span := r.startChat(ctx, spec, req)
	began := time.Now()
	// The output is counted as it streams, so that a model that will not
	// stop is stopped by its budget, not at the timeout: the call's context
	// ends with the budget error.
	sctx, stop := context.WithCancelCause(cctx)
	if r.e.opts.Runtime != nil && (quiet || r.ro.Quiet) {
		// A runtime that shows the stream itself (from its worker) must not
		// show this call's: an answer the gate decides, an evaluation.
		sctx = provider.WithQuiet(sctx)
	}
	defer stop(nil)
	var out stdlib.TokenCounter
	var firstEvent time.Duration
	resp, err := m.Stream(sctx, req, func(ev provider.Event) {
		if firstEvent == 0 {
			// Started, or the first piece of a provider that sends none.
			firstEvent = max(r.e.opts.Now().Sub(start), time.Millisecond/1000)
			r.emitFirstEvent(spec.Address, firstEvent)
		}
		if !quiet {
			r.emitReasoning(ev.ReasoningDelta)
			r.emitDelta(ev.ContentDelta)
		}
		if ev.ToolCall != nil && !c.quiet {
			r.emitToolCallDelta(*ev.ToolCall)
		}
		out.Add(ev.ContentDelta)
		out.Add(ev.ReasoningDelta)
		out.Add(ev.ToolCallDelta)
		if err := res.Streamed(out.Tokens()); err != nil {
			stop(err)
		}
	})
	if err != nil {
		// A failed call reported no usage; it still counts as a model
		// call, with what it streamed.
		res.Release()
		if ctx.Err() == nil && sctx.Err() != nil {
			err = context.Cause(sctx)
		}
		r.endChat(span, spec, resp, err, time.Since(began))
		return provider.Response{}, fmt.Errorf("%s: %w", spec.Address, err)
	}
	r.endChat(span, spec, resp, nil, time.Since(began))
	// Every call needs an id to pair it with its result; a provider that
	// sent none gets one that is stable across a resume.
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].ID == "" {
			resp.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", r.iter, i)
		}
	}
	// The turn happened: it is journalled even when its usage overshot a
	// limit, and the budget error is returned after.
	budgetErr := res.Commit(resp.Usage, resp.UsageKnown)
	// The journal records what the budget counted (a malformed report
	// reconciled, an unreported one estimated), so that its figures, a
	// resume's and the accountant's agree.
	usage := res.Counted()
	cost := budget.CallCost(spec.Pricing, usage)
	r.proposed = r.actionsOf(resp)
	data := reasoningData{
		ReasoningCompleteData: journal.ReasoningCompleteData{
			Model:        spec.Address,
			Content:      resp.Content,
			ToolCalls:    resp.ToolCalls,
			Actions:      r.proposed,
			Usage:        usage,
			UsageKnown:   resp.UsageKnown,
			CostUSD:      cost,
			FinishReason: resp.FinishReason,
			DurationMS:   r.e.opts.Now().Sub(start).Milliseconds(),

			Reasoning:           resp.Reasoning,
			FinishReasonMissing: resp.FinishReasonMissing,
			FirstEventMS:        firstEvent.Milliseconds(),
		},
		Message: provider.Message{Role: provider.Assistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Thinking: resp.Thinking},
	}
	if err := r.hold(journal.ReasoningComplete, data); err != nil {
		return provider.Response{}, err
	}
	if budgetErr != nil {
		// The turn arrived and was paid for: the caller may report it as
		// the answer, with the limit (answerOverBudget).
		return resp, budgetErr
	}
	return resp, nil
}

// writeAhead journals a model call before its request, with the held
// lines: a call in flight when the process dies was paid for, and a resume
// charges it by this line's estimate (spentBy).
func (r *run) writeAhead(spec *plan.Model, est budget.Usage) error {
	// The run's own scratch value: the journal encodes it at once, and the
	// loop pays no allocation for it.
	r.callStarted = journal.ModelCallStartedData{
		Model:                     spec.Address,
		EstimatedPromptTokens:     est.PromptTokens,
		EstimatedCompletionTokens: est.CompletionTokens,
		EstimatedCostUSD:          est.CostUSD,
	}
	if err := r.hold(journal.ModelCallStarted, &r.callStarted); err != nil {
		return err
	}
	return r.flushJournal()
}

// pickModel returns the agent's model, or asks its router, journalling the
// decision with every rejected model.
func (r *run) pickModel(ctx context.Context, c modelCall, est, out int64) (provider.Model, *plan.Model, error) {
	addr := r.agent.Model
	if rt := r.e.plan.Router(addr); rt != nil {
		remaining, limited := remainingCost(r.acct)
		req := routing.Requirements{EstimatedPromptTokens: est, EstimatedOutputTokens: out, RemainingCostUSD: remaining, CostLimited: limited}
		if len(c.tools) > 0 {
			req.Capabilities = append(req.Capabilities, "tools")
		}
		if c.json {
			req.Capabilities = append(req.Capabilities, "json")
		}
		rr, err := r.e.route(rt)
		if err != nil {
			return nil, nil, err
		}
		d, err := routing.Select(req, rr.candidates, rr.router)
		data := journal.ModelRoutedData{Router: rt.Address, Strategy: rt.Strategy, EstimatedTokens: est}
		rejected := d.Rejected
		var nm *routing.NoModelError
		if errors.As(err, &nm) {
			rejected = nm.Rejected
		}
		for _, rej := range rejected {
			data.Rejected = append(data.Rejected, journal.RejectedModel{Model: rej.Model, Reason: rej.Reason})
		}
		if err != nil {
			data.Reason = err.Error()
			_ = r.record(journal.ModelRouted, data)
			return nil, nil, fmt.Errorf("%s: %w", rt.Address, err)
		}
		data.Model = d.Chosen
		data.Reason = fmt.Sprintf("%s score %.3f", rt.Strategy, d.Score)
		if err := r.mustRecord(journal.ModelRouted, data); err != nil {
			return nil, nil, err
		}
		addr = d.Chosen
	}
	spec := r.e.plan.Model(addr)
	if spec == nil {
		return nil, nil, fmt.Errorf("%s: model %q is not in the plan", r.agent.Address, addr)
	}
	m, err := r.e.model(spec)
	return m, spec, err
}

// route is a router block in the routing package's terms.
type route struct {
	candidates []routing.Candidate
	router     routing.Router
}

// route builds (once per engine) a router's candidates and settings; they
// depend only on the plan, and routing.Select does not change them.
func (e *Engine) route(rt *plan.Router) (*route, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if rr, ok := e.routes[rt.Address]; ok {
		return rr, nil
	}
	cands, err := routing.CandidatesFromPlan(e.plan, *rt)
	if err != nil {
		return nil, err
	}
	rr := &route{candidates: cands, router: routing.RouterFromPlan(*rt)}
	if e.routes == nil {
		e.routes = map[string]*route{}
	}
	e.routes[rt.Address] = rr
	return rr, nil
}

// model builds (once) the provider of a model block.
func (e *Engine) model(spec *plan.Model) (provider.Model, error) {
	if m, ok := e.opts.Models[spec.Address]; ok {
		return m, nil
	}
	e.mu.Lock()
	if m, ok := e.models[spec.Address]; ok {
		e.mu.Unlock()
		return m, nil
	}
	e.mu.Unlock()
	var m provider.Model
	var err error
	if e.opts.Cassette != nil {
		m, err = e.opts.Cassette.Model(spec.Address, func() (provider.Model, error) { return e.buildModel(spec) }, e.secrets.JSON)
	} else {
		m, err = e.buildModel(spec)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Address, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if have, ok := e.models[spec.Address]; ok {
		return have, nil
	}
	e.models[spec.Address] = m
	return m, nil
}

// endpoint is a model's base URL, evaluated, and its key, which is a
// secret from here on: journal and terminal redact it.
func (e *Engine) endpoint(spec *plan.Model) (base, key string, err error) {
	base, err = e.resolve(spec.BaseURL)
	if err != nil {
		return "", "", fmt.Errorf("base_url: %w", err)
	}
	if spec.APIKeyEnv != "" {
		key, _ = e.opts.LookupEnv(spec.APIKeyEnv)
		e.addSecret(key)
	}
	return base, key, nil
}

func (e *Engine) buildModel(spec *plan.Model) (provider.Model, error) {
	switch spec.Provider {
	case "scripted":
		return scripted.FromPlan(*spec, e.opts.BaseDir)
	case "openai":
		base, err := e.resolve(spec.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("base_url: %w", err)
		}
		var key string
		if spec.APIKeyEnv != "" {
			// The key is a secret from here on: journal and terminal redact it.
			key, _ = e.opts.LookupEnv(spec.APIKeyEnv)
			e.addSecret(key)
		}
		return openai.New(openai.ConfigFromPlan(*spec, base, key))
	case "anthropic":
		base, key, err := e.endpoint(spec)
		if err != nil {
			return nil, err
		}
		return anthropic.New(anthropic.ConfigFromPlan(*spec, base, key))
	}
	return nil, fmt.Errorf("unknown provider %q", spec.Provider)
}
