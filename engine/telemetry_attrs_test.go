package engine

import (
	"context"

	"github.com/symbi-dev/symbi/provider/fakeserver"
	"regexp"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSpansAttributesInOrder: every span of a react run with two tool
// calls, a denied one and captured content has exactly these attributes,
// in this order, with these events and statuses: the loop's spans are
// started bare and their attributes set once as they end
// (docs/benchmarks.md's Telemetry section), and what is exported is what
// setting them at the start and at the end exported (the text below was
// written by the engine before that change).
func TestSpansAttributesInOrder(t *testing.T) {
	p, dir := fixture{"main.hcl": mustRead(t, "../testdata/e2e/telemetry/main.hcl"), "scripts/turns.json": mustRead(t, "../testdata/e2e/telemetry/scripts/turns.json")}.compile(t)
	e, sr := traced(t, p, dir, func(o *Options) { o.CaptureContent = true })
	res := mustRun(t, e, "", "go", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	got := renderSpans(sr.Ended(), res.RunID)
	if got != wantSpanAttributes {
		t.Errorf("spans:\n%s\nwant:\n%s", got, wantSpanAttributes)
	}
}

// renderSpans is every span in start order (tools by call id) with all
// its attributes in order, its events and its status; the run's id and
// trace and span ids are replaced by placeholders.
func renderSpans(spans []sdktrace.ReadOnlySpan, runID string) string {
	ids := regexp.MustCompile(`\b[0-9a-f]{32}\b|\b[0-9a-f]{16}\b`)
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(tree(spans), "\n"), "\n") {
		name := strings.TrimSpace(line)
		for _, s := range spans {
			if s.Name() != name || strings.Contains(b.String(), "\x00"+s.SpanContext().SpanID().String()) {
				continue
			}
			// tree lists each span once; find the first not yet written.
			b.WriteString("\x00" + s.SpanContext().SpanID().String())
			b.WriteString(line + " kind=" + s.SpanKind().String() + " status=" + s.Status().Code.String() + ":" + s.Status().Description + "\n")
			for _, kv := range s.Attributes() {
				b.WriteString("    " + string(kv.Key) + "=" + kv.Value.Emit() + "\n")
			}
			for _, ev := range s.Events() {
				b.WriteString("    event " + ev.Name)
				for _, kv := range ev.Attributes {
					b.WriteString(" " + string(kv.Key) + "=" + kv.Value.Emit())
				}
				b.WriteString("\n")
			}
			break
		}
	}
	out := regexp.MustCompile("\x00[0-9a-f]{16}").ReplaceAllString(b.String(), "")
	out = strings.ReplaceAll(out, runID, "RUN")
	return ids.ReplaceAllString(out, "ID")
}

const wantSpanAttributes = `invoke_agent assistant kind=internal status=Unset:
    gen_ai.operation.name=invoke_agent
    gen_ai.agent.name=assistant
    gen_ai.agent.id=agent.assistant
    symbi.run.id=RUN
    gen_ai.provider.name=scripted
    gen_ai.request.model=offline
    symbi.mode=react
    symbi.termination=completed
    gen_ai.usage.input_tokens=62
    gen_ai.usage.output_tokens=39
  chat offline kind=client status=Unset:
    gen_ai.operation.name=chat
    gen_ai.provider.name=scripted
    gen_ai.request.model=offline
    symbi.model=model.offline
    symbi.run.id=RUN
    gen_ai.request.max_tokens=4096
    gen_ai.input.messages=[{"role":"user","parts":[{"type":"text","content":"go"}]}]
    gen_ai.usage.input_tokens=1
    gen_ai.usage.output_tokens=23
    gen_ai.response.finish_reasons=["tool_calls"]
    gen_ai.output.messages=[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"calculator","arguments":{"expression":"6 * 7"}},{"type":"tool_call","id":"call_2","name":"trace_context","arguments":{}},{"type":"tool_call","id":"call_3","name":"calculator","arguments":{"expression":"1 / 0"}}],"finish_reason":"tool_calls"}]
  gate calculator kind=internal status=Unset:
    symbi.gate.action=tool_call
    symbi.gate.target=calculator
    symbi.run.id=RUN
    gen_ai.tool.call.id=call_1
    symbi.gate.decision=allow
    symbi.gate.engine=rules
    symbi.gate.reason=tool_call "calculator" matches allow rule "calculator"
    symbi.gate.policy=policy.rules
    gen_ai.tool.call.arguments={"expression":"6 * 7"}
  gate trace_context kind=internal status=Unset:
    symbi.gate.action=tool_call
    symbi.gate.target=trace_context
    symbi.run.id=RUN
    gen_ai.tool.call.id=call_2
    symbi.gate.decision=allow
    symbi.gate.engine=rules
    symbi.gate.reason=tool_call "trace_context" matches allow rule "trace_context"
    symbi.gate.policy=policy.rules
    gen_ai.tool.call.arguments={}
  gate calculator kind=internal status=Unset:
    symbi.gate.action=tool_call
    symbi.gate.target=calculator
    symbi.run.id=RUN
    gen_ai.tool.call.id=call_3
    symbi.gate.decision=deny
    symbi.gate.engine=rules
    symbi.gate.reason=tool_call "calculator" matches deny rule "calculator:expression=*/ 0*"
    symbi.gate.policy=policy.rules
    gen_ai.tool.call.arguments={"expression":"1 / 0"}
  execute_tool calculator kind=internal status=Unset:
    gen_ai.operation.name=execute_tool
    gen_ai.tool.name=calculator
    gen_ai.tool.type=function
    symbi.tool.effect=none
    gen_ai.tool.call.id=call_1
    symbi.run.id=RUN
    gen_ai.tool.call.arguments={"expression":"6 * 7"}
    symbi.tool.outcome=ok
    gen_ai.tool.call.result=42
  execute_tool trace_context kind=internal status=Unset:
    gen_ai.operation.name=execute_tool
    gen_ai.tool.name=trace_context
    gen_ai.tool.type=function
    symbi.tool.effect=read
    gen_ai.tool.call.id=call_2
    symbi.run.id=RUN
    gen_ai.tool.call.arguments={}
    symbi.tool.outcome=ok
    gen_ai.tool.call.result=00-ID-ID-01
  chat offline kind=client status=Unset:
    gen_ai.operation.name=chat
    gen_ai.provider.name=scripted
    gen_ai.request.model=offline
    symbi.model=model.offline
    symbi.run.id=RUN
    gen_ai.request.max_tokens=4096
    gen_ai.input.messages=[{"role":"user","parts":[{"type":"text","content":"go"}]},{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"calculator","arguments":{"expression":"6 * 7"}},{"type":"tool_call","id":"call_2","name":"trace_context","arguments":{}},{"type":"tool_call","id":"call_3","name":"calculator","arguments":{"expression":"1 / 0"}}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"call_1","response":"42"}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"call_2","response":"00-ID-ID-01"}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"call_3","response":"[policy denied] tool_call \"calculator\" matches deny rule \"calculator:expression=*/ 0*\""}]}]
    gen_ai.usage.input_tokens=61
    gen_ai.usage.output_tokens=16
    gen_ai.response.finish_reasons=["stop"]
    gen_ai.output.messages=[{"role":"assistant","parts":[{"type":"text","content":"6 × 7 is 42; 1 / 0 was refused."}],"finish_reason":"stop"}]
  gate respond kind=internal status=Unset:
    symbi.gate.action=respond
    symbi.gate.target=respond
    symbi.run.id=RUN
    symbi.gate.decision=allow
    symbi.gate.engine=chain
    symbi.gate.reason=no policy addresses respond; respond is allowed unless a policy denies it
    gen_ai.tool.call.arguments=
    event symbi.policy.decision symbi.gate.policy=policy.rules symbi.gate.engine=rules symbi.gate.decision=not_applicable symbi.gate.reason=no rule matches respond
`

// TestSpanAllocs: what tracing adds to a 20-iteration react run (60 spans
// of the loop: a chat, a gate and a tool call an iteration), counted in
// allocations a span against the same run untraced: 20 before the loop's
// spans were started bare with their start options made once and their
// attribute slices pooled, 10.8 after (the SDK's span, its context and
// its one copy of the attributes; the span's name; the model request's
// traceparent header). Counted, not timed: the count does not move with
// the load.
func TestSpanAllocs(t *testing.T) {
	const iterations = 20
	srv := fakeserver.New(t, fakeserver.WithHandler(counting(iterations)), fakeserver.WithoutHistory())
	p, dir := fixture{"main.hcl": benchHCL(srv.URL(), iterations)}.compile(t)
	tp := sdktrace.NewTracerProvider() // spans are made and ended, and go nowhere
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	noEnv := func(string) (string, bool) { return "", false }
	allocs := func(o Options) float64 {
		o.BaseDir, o.StateDir, o.LookupEnv = dir, t.TempDir(), noEnv
		e, err := New(p, o)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		return testing.AllocsPerRun(5, func() {
			if res, err := e.Run(context.Background(), "a", "count", RunOptions{}); err != nil || res.Termination.Reason != Completed {
				t.Fatalf("%v %v", err, res.Termination)
			}
		})
	}
	off := allocs(Options{})
	on := allocs(Options{Tracer: tp})
	perSpan := (on - off) / (3 * iterations)
	t.Logf("%.0f allocations a run untraced, %.0f traced: %.1f a span", off, on, perSpan)
	if perSpan > 13 {
		t.Errorf("tracing allocates %.1f times a span of the loop, want at most 13 (it was 20)", perSpan)
	}
}

// TestSpansNotSampled: under a sampler that records nothing the loop
// builds no attributes and ends every span it started; the run completes
// and still knows its trace id (the journal's started line carries it).
func TestSpansNotSampled(t *testing.T) {
	p, dir := fixture{"main.hcl": mustRead(t, "../testdata/e2e/telemetry/main.hcl"), "scripts/turns.json": mustRead(t, "../testdata/e2e/telemetry/scripts/turns.json")}.compile(t)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	e, _ := newEngine(t, p, dir, func(o *Options) { o.Tracer = tp; o.CaptureContent = true })
	res := mustRun(t, e, "", "go", RunOptions{})
	if res.Termination.Reason != Completed || res.TraceID == "" {
		t.Fatalf("termination %s, trace %q", res.Termination, res.TraceID)
	}
	if n := len(sr.Started()) + len(sr.Ended()); n != 0 {
		t.Errorf("%d spans recorded under a sampler that records none", n)
	}
}
