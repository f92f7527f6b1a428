package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/decisionlog"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// The spans the engine makes (docs/telemetry.md lists them, and
// TestTelemetryDoc holds that table to what the runs of every mode emit).
// Where the OpenTelemetry GenAI conventions have a span, its name is
// theirs: "{operation} {target}".
const (
	spanInvokeAgent = "invoke_agent" // a run, a delegation, an evaluator, a judge, a plan step's run
	spanChat        = "chat"         // one model call
	spanExecuteTool = "execute_tool" // one call of a tool (each attempt)
	spanGate        = "gate"         // one gate decision
	spanCandidate   = "candidate"    // one best-of-N candidate
	spanScore       = "score"        // one best-of-N candidate's scoring
	spanReflect     = "reflect"      // one reflection attempt
	spanPlanStep    = "plan_step"    // one plan step
	spanRecover     = "recover"      // a failed call's recovery chain
)

// The attributes. gen_ai.* are the GenAI conventions'; symbi.* are
// symbi's own, where the conventions have none.
const (
	attrOperation        = attribute.Key("gen_ai.operation.name")
	attrProvider         = attribute.Key("gen_ai.provider.name")
	attrAgentName        = attribute.Key("gen_ai.agent.name")
	attrAgentID          = attribute.Key("gen_ai.agent.id")
	attrRequestModel     = attribute.Key("gen_ai.request.model")
	attrResponseModel    = attribute.Key("gen_ai.response.model")
	attrResponseID       = attribute.Key("gen_ai.response.id")
	attrTemperature      = attribute.Key("gen_ai.request.temperature")
	attrMaxTokens        = attribute.Key("gen_ai.request.max_tokens")
	attrInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	attrFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	attrInputMessages    = attribute.Key("gen_ai.input.messages")
	attrOutputMessages   = attribute.Key("gen_ai.output.messages")
	attrToolName         = attribute.Key("gen_ai.tool.name")
	attrToolCallID       = attribute.Key("gen_ai.tool.call.id")
	attrToolType         = attribute.Key("gen_ai.tool.type")
	attrToolArguments    = attribute.Key("gen_ai.tool.call.arguments")
	attrToolResult       = attribute.Key("gen_ai.tool.call.result")
	attrTokenType        = attribute.Key("gen_ai.token.type")
	attrErrorType        = attribute.Key("error.type")
	attrRunID            = attribute.Key("symbi.run.id")
	attrMode             = attribute.Key("symbi.mode")
	attrDepth            = attribute.Key("symbi.depth")
	attrTermination      = attribute.Key("symbi.termination")
	attrBudgetLimit      = attribute.Key("symbi.budget.limit")
	attrModel            = attribute.Key("symbi.model")
	attrGateAction       = attribute.Key("symbi.gate.action")
	attrGateTarget       = attribute.Key("symbi.gate.target")
	attrGateDecision     = attribute.Key("symbi.gate.decision")
	attrGateEngine       = attribute.Key("symbi.gate.engine")
	attrGatePolicy       = attribute.Key("symbi.gate.policy")
	attrGateReason       = attribute.Key("symbi.gate.reason")
	attrToolEffect       = attribute.Key("symbi.tool.effect")
	attrToolOutcome      = attribute.Key("symbi.tool.outcome")
	attrBreakerFrom      = attribute.Key("symbi.circuit_breaker.from")
	attrBreakerTo        = attribute.Key("symbi.circuit_breaker.to")
	attrRecoveryStrategy = attribute.Key("symbi.recovery.strategy")
	attrRecoveryAttempt  = attribute.Key("symbi.recovery.attempt")
	attrCandidateIndex   = attribute.Key("symbi.best_of_n.candidate")
	attrCandidateStatus  = attribute.Key("symbi.best_of_n.status")
	attrCandidateScore   = attribute.Key("symbi.best_of_n.score")
	attrSelected         = attribute.Key("symbi.best_of_n.selected")
	attrReflectAttempt   = attribute.Key("symbi.reflection.attempt")
	attrReflectScore     = attribute.Key("symbi.reflection.score")
	attrReflectVerdict   = attribute.Key("symbi.reflection.verdict")
	attrStepID           = attribute.Key("symbi.plan.step")
	attrStepStatus       = attribute.Key("symbi.plan.step.status")
)

// The span events.
const (
	eventPolicyDecision = "symbi.policy.decision"       // one policy's decision in a gate
	eventBreaker        = "symbi.circuit_breaker.state" // a tool's breaker changed state
	eventRecovery       = "symbi.recovery"              // one strategy of a recovery chain
	eventSelected       = "symbi.best_of_n.selected"    // the candidate best-of-N chose
)

// The metrics: the GenAI client metrics and symbi's own.
const (
	metricTokenUsage      = "gen_ai.client.token.usage"
	metricOpDuration      = "gen_ai.client.operation.duration"
	metricGateDecisions   = "symbi.gate.decisions"
	metricToolCalls       = "symbi.tool.calls"
	metricBudgetExhausted = "symbi.budget.exhaustions"
	metricRunDuration     = "symbi.run.duration"
)

// instrumentationName is the tracer's and meter's scope.
const instrumentationName = "github.com/symbi-dev/symbi/engine"

// instruments are what the engine emits through, made once in New. A nil
// tracer means no spans; metrics false means no metrics: the loop then
// pays for neither.
type instruments struct {
	tracer  trace.Tracer
	capture bool
	// kinds are the start options of each span kind the loop's spans
	// have, made once: a variadic argument of an interface's method is
	// made anew each call.
	kinds map[trace.SpanKind][]trace.SpanStartOption
	// attrs holds the loop's attribute slices between spans (see openSpan).
	attrs *sync.Pool

	metrics         bool
	tokenUsage      metric.Int64Histogram
	opDuration      metric.Float64Histogram
	gateDecisions   metric.Int64Counter
	toolCalls       metric.Int64Counter
	budgetExhausted metric.Int64Counter
	runDuration     metric.Float64Histogram

	// sets caches the attribute sets of the metrics' measurements, which
	// repeat (a gate's engine and outcome, a tool and its outcome): a set
	// is sorted and hashed once, not per measurement.
	sets *measureSets

	decisions *decisionlog.Writer
	// process labels every decision log line (OPA's labels.id).
	process string
	version string
}

func newInstruments(o Options) instruments {
	in := instruments{capture: o.CaptureContent, decisions: o.DecisionLog, version: o.Version}
	if o.Tracer != nil {
		in.tracer = o.Tracer.Tracer(instrumentationName)
		in.kinds = map[trace.SpanKind][]trace.SpanStartOption{
			trace.SpanKindInternal: {trace.WithSpanKind(trace.SpanKindInternal)},
			trace.SpanKindClient:   {trace.WithSpanKind(trace.SpanKindClient)},
		}
		in.attrs = &sync.Pool{New: func() any {
			// Room for the most a span of the loop has: a chat's eight at
			// the start and six at the end, content included.
			s := make([]attribute.KeyValue, 0, 16)
			return &s
		}}
	}
	if o.Meter != nil {
		m := o.Meter.Meter(instrumentationName)
		in.metrics = true
		in.sets = &measureSets{m: map[setKey]measureOpts{}}
		// The GenAI conventions' bucket boundaries.
		in.tokenUsage, _ = m.Int64Histogram(metricTokenUsage, metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used"),
			metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
		in.opDuration, _ = m.Float64Histogram(metricOpDuration, metric.WithUnit("s"),
			metric.WithDescription("GenAI operation duration"),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
		in.gateDecisions, _ = m.Int64Counter(metricGateDecisions, metric.WithUnit("{decision}"),
			metric.WithDescription("Gate decisions, by engine and outcome"))
		in.toolCalls, _ = m.Int64Counter(metricToolCalls, metric.WithUnit("{call}"),
			metric.WithDescription("Tool calls, by tool and outcome"))
		in.budgetExhausted, _ = m.Int64Counter(metricBudgetExhausted, metric.WithUnit("{run}"),
			metric.WithDescription("Runs stopped by a budget limit, by limit"))
		in.runDuration, _ = m.Float64Histogram(metricRunDuration, metric.WithUnit("s"),
			metric.WithDescription("Run durations, by agent and termination"))
	}
	if in.decisions != nil {
		var b [8]byte
		_, _ = rand.Read(b[:])
		in.process = hex.EncodeToString(b[:])
	}
	return in
}

// openSpan is a span the loop has started and the attributes it will end
// with. The SDK copies a span's attributes each time they are set (and
// the start options' once more), so the loop's spans are started bare and
// their attributes, gathered in one slice with room for those of the end,
// set once as they end: one copy a span, not three or four. The SDK's
// SetAttributes copies what it is given, so the slice goes back to a pool
// for the next span (TestSpansAttributesInOrder would see a span's
// attributes overwritten by a later span's if it did not). The spans'
// attributes are the same, in the same order. A span the sampler dropped
// is not recording: no attribute is built for it.
type openSpan struct {
	span  trace.Span
	attrs []attribute.KeyValue
	buf   *[]attribute.KeyValue // the pool's slice attrs is built in
	pool  *sync.Pool
}

// startOpen starts a span named name with no attributes, and the slice
// its attributes go in (nil when it is not recording).
func (in *instruments) startOpen(ctx context.Context, name string, kind trace.SpanKind) (context.Context, openSpan) {
	ctx, span := in.tracer.Start(ctx, name, in.kinds[kind]...)
	if !span.IsRecording() {
		return ctx, openSpan{span: span}
	}
	buf := in.attrs.Get().(*[]attribute.KeyValue)
	return ctx, openSpan{span: span, attrs: (*buf)[:0], buf: buf, pool: in.attrs}
}

// end sets the span's attributes, ends it, and gives the slice back,
// cleared (it must not keep a run's strings alive).
func (o openSpan) end() {
	o.span.SetAttributes(o.attrs...)
	o.span.End()
	clear(o.attrs)
	*o.buf = o.attrs[:0]
	o.pool.Put(o.buf)
}

// runKey carries the run's id in its context, for the spans the toolbox's
// calls make (Observe knows no run).
type runKey struct{}

// startSpan opens the run's invoke_agent span, under the span in ctx (a
// delegating run's, a candidate's, a plan step's, or the trace the process
// joined).
func (r *run) startSpan(ctx context.Context) {
	in := &r.e.inst
	if in.tracer == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attrOperation.String("invoke_agent"),
		attrAgentName.String(r.name),
		attrAgentID.String(r.agent.Address),
		attrRunID.String(r.id),
	}
	if r.ro.Depth > 0 {
		attrs = append(attrs, attrDepth.Int(r.ro.Depth))
	}
	if m := r.e.plan.Model(r.agent.Model); m != nil {
		attrs = append(attrs, attrProvider.String(m.Provider), attrRequestModel.String(modelName(m)))
	}
	_, r.span = in.tracer.Start(ctx, spanInvokeAgent+" "+r.name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// traced is ctx under the run's span, with the run's id for the toolbox's
// spans.
func (r *run) traced(ctx context.Context) context.Context {
	if r.span == nil {
		return ctx
	}
	return context.WithValue(trace.ContextWithSpan(ctx, r.span), runKey{}, r.id)
}

// traceID is the run's trace id, "" when telemetry is off.
func (r *run) traceID() string {
	if r.span == nil {
		return ""
	}
	if sc := r.span.SpanContext(); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// endSpan closes the run's span with its end: an error status for every
// end but completed, and for a budget limit the limit.
func (r *run) endSpan(t Termination, usage budget.Amount, elapsed time.Duration) {
	in := &r.e.inst
	if in.metrics {
		in.runDuration.Record(context.Background(), elapsed.Seconds(), in.sets.get(setKeys{attrAgentName, attrTermination}, setValues{r.name, string(t.Reason)}).record...)
		if t.Limit != "" && (t.Reason == BudgetExceeded || t.Reason == MaxIterations || t.Reason == TimedOut) {
			in.budgetExhausted.Add(context.Background(), 1, in.sets.get(setKeys{attrBudgetLimit}, setValues{t.Limit}).add...)
		}
	}
	if r.span == nil {
		return
	}
	r.span.SetAttributes(
		attrMode.String(r.mode),
		attrTermination.String(string(t.Reason)),
		attrInputTokens.Int64(usage.PromptTokens),
		attrOutputTokens.Int64(usage.CompletionTokens),
	)
	if t.Limit != "" {
		r.span.SetAttributes(attrBudgetLimit.String(t.Limit))
	}
	if t.Reason != Completed {
		desc := t.String()
		if t.Reason == BudgetExceeded || t.Reason == MaxIterations {
			desc = "budget exhausted: " + t.Limit
		}
		r.span.SetAttributes(attrErrorType.String(string(t.Reason)))
		r.span.SetStatus(codes.Error, desc)
	}
	r.span.End()
}

// startChat opens a model call's chat span; ctx is returned unchanged and
// the span is nil when tracing is off.
func (r *run) startChat(ctx context.Context, spec *plan.Model, req provider.Request) (context.Context, openSpan) {
	in := &r.e.inst
	if in.tracer == nil {
		return ctx, openSpan{}
	}
	ctx, o := in.startOpen(ctx, spanChat+" "+modelName(spec), trace.SpanKindClient)
	if o.attrs == nil {
		return ctx, o
	}
	o.attrs = append(o.attrs,
		attrOperation.String("chat"),
		attrProvider.String(spec.Provider),
		attrRequestModel.String(modelName(spec)),
		attrModel.String(spec.Address),
		attrRunID.String(r.id),
	)
	if req.Temperature != nil {
		o.attrs = append(o.attrs, attrTemperature.Float64(*req.Temperature))
	}
	if req.MaxOutputTokens > 0 {
		o.attrs = append(o.attrs, attrMaxTokens.Int(req.MaxOutputTokens))
	}
	if in.capture {
		// The messages are the request's, which reason has redacted.
		o.attrs = append(o.attrs, attrInputMessages.String(string(inputMessages(req.Messages))))
	}
	return ctx, o
}

// endChat closes a chat span and records the GenAI client metrics.
func (r *run) endChat(o openSpan, spec *plan.Model, resp provider.Response, err error, elapsed time.Duration) {
	in := &r.e.inst
	if in.metrics {
		model := modelName(spec)
		errType := ""
		if err != nil {
			errType = errorType(err)
		}
		in.opDuration.Record(context.Background(), elapsed.Seconds(), in.sets.get(setKeys{attrProvider, attrRequestModel, attrResponseModel, attrErrorType, attrOperation}, setValues{spec.Provider, model, resp.Model, errType, "chat"}).record...)
		if err == nil && resp.UsageKnown {
			in.tokenUsage.Record(context.Background(), resp.Usage.PromptTokens, in.sets.get(setKeys{attrProvider, attrRequestModel, attrResponseModel, attrTokenType, attrOperation}, setValues{spec.Provider, model, resp.Model, "input", "chat"}).record...)
			in.tokenUsage.Record(context.Background(), resp.Usage.CompletionTokens, in.sets.get(setKeys{attrProvider, attrRequestModel, attrResponseModel, attrTokenType, attrOperation}, setValues{spec.Provider, model, resp.Model, "output", "chat"}).record...)
		}
	}
	if o.span == nil {
		return
	}
	if o.attrs == nil {
		o.span.End() // not sampled
		return
	}
	if err != nil {
		o.attrs = append(o.attrs, attrErrorType.String(errorType(err)))
		o.span.SetStatus(codes.Error, r.e.secrets.Text(err.Error()))
		o.end()
		return
	}
	o.attrs = append(o.attrs,
		attrInputTokens.Int64(resp.Usage.PromptTokens),
		attrOutputTokens.Int64(resp.Usage.CompletionTokens),
	)
	if resp.FinishReason != "" {
		o.attrs = append(o.attrs, attrFinishReasons.StringSlice([]string{resp.FinishReason}))
	}
	if resp.ID != "" {
		o.attrs = append(o.attrs, attrResponseID.String(resp.ID))
	}
	if resp.Model != "" {
		o.attrs = append(o.attrs, attrResponseModel.String(resp.Model))
	}
	if in.capture {
		o.attrs = append(o.attrs, attrOutputMessages.String(string(r.e.secrets.JSON(outputMessages(resp)))))
	}
	o.end()
}

// errorType is an error's error.type: a provider's or a tool's kind, a
// budget's limit, else "error".
func errorType(err error) string {
	var pe *provider.Error
	var ex *budget.Exceeded
	switch {
	case errors.As(err, &pe):
		return string(pe.Kind)
	case errors.As(err, &ex):
		return "budget_exceeded"
	}
	if k := builtins.KindOf(err); k != "" {
		return string(k)
	}
	return "error"
}

// The GenAI conventions' message form: a role and its parts.
type genAIMessage struct {
	Role         string      `json:"role"`
	Parts        []genAIPart `json:"parts"`
	FinishReason string      `json:"finish_reason,omitempty"`
}

type genAIPart struct {
	Type      string          `json:"type"` // text, tool_call, tool_call_response
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

func inputMessages(msgs []provider.Message) []byte {
	out := make([]genAIMessage, 0, len(msgs))
	for _, m := range msgs {
		gm := genAIMessage{Role: string(m.Role)}
		switch {
		case m.Role == provider.ToolRole:
			gm.Parts = append(gm.Parts, genAIPart{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
		default:
			if m.Content != "" {
				gm.Parts = append(gm.Parts, genAIPart{Type: "text", Content: m.Content})
			}
			for _, c := range m.ToolCalls {
				gm.Parts = append(gm.Parts, genAIPart{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: jsonOrString(c.Arguments)})
			}
		}
		out = append(out, gm)
	}
	b, _ := json.Marshal(out)
	return b
}

func outputMessages(resp provider.Response) []byte {
	gm := genAIMessage{Role: "assistant", FinishReason: resp.FinishReason}
	if resp.Content != "" {
		gm.Parts = append(gm.Parts, genAIPart{Type: "text", Content: resp.Content})
	}
	for _, c := range resp.ToolCalls {
		gm.Parts = append(gm.Parts, genAIPart{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: jsonOrString(c.Arguments)})
	}
	b, _ := json.Marshal([]genAIMessage{gm})
	return b
}

func jsonOrString(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// startGate opens a gate decision's span.
func (r *run) startGate(ctx context.Context, a policy.Action) (context.Context, openSpan) {
	in := &r.e.inst
	if in.tracer == nil {
		return ctx, openSpan{}
	}
	target := actionTarget(a)
	if a.Type == policy.Respond {
		target = "respond"
	}
	ctx, o := in.startOpen(ctx, spanGate+" "+target, trace.SpanKindInternal)
	if o.attrs == nil {
		return ctx, o
	}
	o.attrs = append(o.attrs,
		attrGateAction.String(string(a.Type)),
		attrGateTarget.String(target),
		attrRunID.String(r.id),
	)
	if a.CallID != "" {
		o.attrs = append(o.attrs, attrToolCallID.String(a.CallID))
	}
	return ctx, o
}

// endGate closes a gate's span with its decision and every policy's, counts
// the decision, and writes the decision log's lines.
func (r *run) endGate(o openSpan, g gated, elapsed time.Duration) {
	in := &r.e.inst
	d := g.decision
	if d.Engine == "" {
		d.Engine = "engine"
	}
	if g.ok && d.Outcome != policy.Allow && d.Outcome != policy.Modify {
		d.Outcome = policy.Allow // a person's approval of an ask
	}
	if !g.ok {
		d.Outcome = policy.Deny
	}
	if in.metrics {
		in.gateDecisions.Add(context.Background(), 1, in.sets.get(setKeys{attrGateEngine, attrGateDecision}, setValues{d.Engine, string(d.Outcome)}).add...)
	}
	if in.decisions != nil {
		r.logDecisions(o.span, g, elapsed)
	}
	if o.span == nil {
		return
	}
	if o.attrs == nil {
		o.span.End() // not sampled
		return
	}
	span := o.span
	red := &r.e.secrets
	o.attrs = append(o.attrs,
		attrGateDecision.String(string(d.Outcome)),
		attrGateEngine.String(d.Engine),
		attrGateReason.String(red.Text(d.Reason)),
	)
	if d.Policy != "" {
		o.attrs = append(o.attrs, attrGatePolicy.String(d.Policy))
	}
	// One policy's decision is the span's own; the events say what each
	// policy of a longer chain decided.
	for _, t := range g.trail {
		if len(g.trail) == 1 && t.Policy == d.Policy && t.Outcome == d.Outcome {
			break
		}
		span.AddEvent(eventPolicyDecision, trace.WithAttributes(
			attrGatePolicy.String(t.Policy),
			attrGateEngine.String(t.Engine),
			attrGateDecision.String(string(t.Outcome)),
			attrGateReason.String(red.Text(t.Reason)),
		))
	}
	if in.capture {
		o.attrs = append(o.attrs, attrToolArguments.String(string(red.JSON(g.action.Arguments))))
	}
	o.end()
}

// logDecisions writes one decision log line per decision of the gate: each
// policy's in the chain, a person's, or the engine's own refusal (an
// unknown tool, arguments that do not fit, a protected path) when no policy
// was asked.
func (r *run) logDecisions(span trace.Span, g gated, elapsed time.Duration) {
	in := &r.e.inst
	input, err := json.Marshal(r.policyInput(g.action))
	if err != nil {
		return
	}
	trail := g.trail
	if len(trail) == 0 {
		trail = []policy.Decision{g.decision}
	}
	var traceID, spanID string
	if span != nil {
		sc := span.SpanContext()
		traceID, spanID = sc.TraceID().String(), sc.SpanID().String()
	}
	now := r.e.opts.Now().UTC()
	for _, d := range trail {
		engine := d.Engine
		if engine == "" {
			engine = "engine"
		}
		result, err := json.Marshal(d)
		if err != nil {
			continue
		}
		labels := map[string]string{"id": in.process, "version": in.version, "engine": engine, "agent": r.agent.Address, "run_id": r.id}
		if d.Policy != "" {
			labels["policy"] = d.Policy
		}
		ev := decisionlog.Event{
			Labels:     labels,
			DecisionID: r.decisionID(),
			TraceID:    traceID,
			SpanID:     spanID,
			Path:       r.decisionPath(d, engine),
			Input:      input,
			Result:     result,
			Timestamp:  now,
			Metrics:    map[string]any{"timer_gate_ns": elapsed.Nanoseconds()},
		}
		if d.Elapsed > 0 {
			ev.Metrics["timer_policy_eval_ns"] = d.Elapsed.Nanoseconds()
		}
		line, err := decisionlog.Encode(ev)
		if err != nil {
			continue
		}
		// Redacted like the journal: the input holds the model's
		// arguments, which may quote a secret a tool printed.
		_ = in.decisions.WriteLine(r.e.secrets.JSON(line))
	}
}

// decisionPath is a decision's OPA path: a Rego policy's query as a path,
// for the others the policy's address as one.
func (r *run) decisionPath(d policy.Decision, engine string) string {
	if p := r.e.plan.Policy(d.Policy); p != nil {
		if p.Kind == "opa" && p.OPA != nil && p.OPA.Query != "" {
			return strings.ReplaceAll(strings.TrimPrefix(p.OPA.Query, "data."), ".", "/")
		}
		return strings.ReplaceAll(p.Address, ".", "/")
	}
	return "symbi/" + engine
}

// decisionID is a new random UUID (version 4), from the engine's source of
// randomness.
func (r *run) decisionID() string {
	var b [16]byte
	_, _ = r.e.opts.Rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// observeTool is the toolbox's Observe: an execute_tool span per call, and
// the tool-call metric.
func (e *Engine) observeTool(ctx context.Context, c builtins.Call) (context.Context, func(builtins.CallEnd)) {
	in := &e.inst
	var o openSpan
	if in.tracer != nil {
		ctx, o = in.startOpen(ctx, spanExecuteTool+" "+c.Tool, trace.SpanKindInternal)
		if o.attrs != nil {
			o.attrs = append(o.attrs,
				attrOperation.String("execute_tool"),
				attrToolName.String(c.Tool),
				attrToolType.String("function"),
				attrToolEffect.String(c.Info.Effect),
			)
			if c.CallID != "" {
				o.attrs = append(o.attrs, attrToolCallID.String(c.CallID))
			}
			if id, ok := ctx.Value(runKey{}).(string); ok {
				o.attrs = append(o.attrs, attrRunID.String(id))
			}
			if in.capture {
				o.attrs = append(o.attrs, attrToolArguments.String(string(e.secrets.JSON(c.Arguments))))
			}
		}
	}
	tool := c.Tool // not all of c: the closure keeps what it uses
	return ctx, func(end builtins.CallEnd) {
		o := o
		outcome := "ok"
		if end.Err != nil {
			outcome = string(builtins.KindOf(end.Err))
		}
		if in.metrics {
			in.toolCalls.Add(context.Background(), 1, in.sets.get(setKeys{attrToolName, attrToolOutcome}, setValues{tool, outcome}).add...)
		}
		if o.span == nil {
			return
		}
		if o.attrs == nil {
			o.span.End() // not sampled
			return
		}
		span := o.span
		o.attrs = append(o.attrs, attrToolOutcome.String(outcome))
		if end.BreakerBefore != end.BreakerAfter {
			span.AddEvent(eventBreaker, trace.WithAttributes(attrToolName.String(tool),
				attrBreakerFrom.String(string(end.BreakerBefore)), attrBreakerTo.String(string(end.BreakerAfter))))
		}
		if end.Err != nil {
			o.attrs = append(o.attrs, attrErrorType.String(outcome))
			span.SetStatus(codes.Error, e.secrets.Text(end.Err.Error()))
		} else if in.capture {
			o.attrs = append(o.attrs, attrToolResult.String(e.secrets.Text(end.Result.Content)))
		}
		o.end()
	}
}

// startStep opens a span for a part of a run that is not a model call, a
// tool call or a gate: a reflection attempt, a plan step, a candidate, its
// scoring, a recovery. It returns ctx and a nil span when telemetry is
// off.
func (e *Engine) startStep(ctx context.Context, name, runID string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if e.inst.tracer == nil {
		return ctx, nil
	}
	attrs = append(attrs, attrRunID.String(runID))
	return e.inst.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// endStep closes a span startStep made, with err as its status.
func (e *Engine) endStep(span trace.Span, err error, attrs ...attribute.KeyValue) {
	if span == nil {
		return
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.SetAttributes(attrErrorType.String(errorType(err)))
		span.SetStatus(codes.Error, e.secrets.Text(err.Error()))
	}
	span.End()
}

// modelName is the model a request names: the block's name, or, for a
// model that has none (a scripted one), the block's own name.
func modelName(m *plan.Model) string {
	if m.Name != "" {
		return m.Name
	}
	return strings.TrimPrefix(m.Address, "model.")
}

// measureSets caches measurement options by their attributes' values.
type measureSets struct {
	mu sync.RWMutex
	m  map[setKey]measureOpts
}

// measureOpts are the options of one attribute set, as the slices Add and
// Record take: passed on with ..., they are not made again each time.
type measureOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// setKeys and setValues are the attributes of one measurement: at most
// five.
type (
	setKeys   [5]attribute.Key
	setValues [5]string
	setKey    struct {
		k setKeys
		v setValues
	}
)

// get is the measurement options of the attributes keys=values; an empty
// value leaves its attribute out.
func (s *measureSets) get(keys setKeys, vals setValues) measureOpts {
	key := setKey{keys, vals}
	s.mu.RLock()
	opts, ok := s.m[key]
	s.mu.RUnlock()
	if ok {
		return opts
	}
	attrs := make([]attribute.KeyValue, 0, len(keys))
	for i, k := range keys {
		if k != "" && vals[i] != "" {
			attrs = append(attrs, k.String(vals[i]))
		}
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	opts = measureOpts{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}}
	s.mu.Lock()
	if len(s.m) < 4096 { // bounded: tool names come from MCP servers
		s.m[key] = opts
	}
	s.mu.Unlock()
	return opts
}
