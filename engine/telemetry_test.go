package engine

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/plan"
)

// traced builds an engine whose spans go to an in-memory recorder.
func traced(t *testing.T, p *plan.Plan, dir string, mod func(*Options)) (*Engine, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.Tracer = tp
		if mod != nil {
			mod(o)
		}
	})
	return e, sr
}

func compileExample(t *testing.T, path string) (*plan.Plan, string) {
	t.Helper()
	cfg, diags := interp.Compile(path, interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg.Plan, cfg.BaseDir
}

// tree renders the recorded spans as an indented tree, children in start
// order, each with the attributes keys names.
func tree(spans []sdktrace.ReadOnlySpan, keys ...string) string {
	children := map[string][]sdktrace.ReadOnlySpan{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID().String()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		p := s.Parent().SpanID().String()
		if !ids[p] {
			roots = append(roots, s)
			continue
		}
		children[p] = append(children[p], s)
	}
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		b.WriteString(strings.Repeat("  ", depth) + s.Name())
		for _, k := range keys {
			for _, kv := range s.Attributes() {
				if string(kv.Key) == k {
					b.WriteString(" " + k + "=" + kv.Value.Emit())
				}
			}
		}
		if s.Status().Code == codes.Error {
			b.WriteString(" ERROR")
		}
		b.WriteString("\n")
		kids := children[s.SpanContext().SpanID().String()]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].StartTime().Before(kids[j].StartTime()) })
		// Tool calls of one round run concurrently: in call order.
		for i := 0; i < len(kids); {
			j := i
			for j < len(kids) && strings.HasPrefix(kids[j].Name(), "execute_tool ") {
				j++
			}
			run := kids[i:j]
			sort.SliceStable(run, func(a, b int) bool {
				x, _ := attr(run[a], "gen_ai.tool.call.id")
				y, _ := attr(run[b], "gen_ai.tool.call.id")
				return x.AsString() < y.AsString()
			})
			i = max(j, i+1)
		}
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// checkRunIDs: every span carries a symbi.run.id, and the root's is the
// run's.
func checkRunIDs(t *testing.T, spans []sdktrace.ReadOnlySpan, runID string) {
	t.Helper()
	for _, s := range spans {
		v, ok := attr(s, "symbi.run.id")
		if !ok || !strings.HasPrefix(v.AsString(), runID) {
			t.Errorf("span %s: symbi.run.id %q, want the run's %s (or one of its sub-runs')", s.Name(), v.AsString(), runID)
		}
		if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
			t.Errorf("span %s is in another trace", s.Name())
		}
	}
}

func TestSpansReact(t *testing.T) {
	p, dir := fixture{"main.hcl": mustRead(t, "../testdata/e2e/telemetry/main.hcl"), "scripts/turns.json": mustRead(t, "../testdata/e2e/telemetry/scripts/turns.json")}.compile(t)
	e, sr := traced(t, p, dir, nil)
	res := mustRun(t, e, "", "go", RunOptions{})
	if res.Termination.Reason != Completed || res.TraceID == "" {
		t.Fatalf("termination %s, trace %q", res.Termination, res.TraceID)
	}
	spans := sr.Ended()
	got := tree(spans, "gen_ai.tool.call.id", "symbi.gate.decision", "symbi.gate.engine")
	want := `invoke_agent assistant
  chat offline
  gate calculator gen_ai.tool.call.id=call_1 symbi.gate.decision=allow symbi.gate.engine=rules
  gate trace_context gen_ai.tool.call.id=call_2 symbi.gate.decision=allow symbi.gate.engine=rules
  gate calculator gen_ai.tool.call.id=call_3 symbi.gate.decision=deny symbi.gate.engine=rules
  execute_tool calculator gen_ai.tool.call.id=call_1
  execute_tool trace_context gen_ai.tool.call.id=call_2
  chat offline
  gate respond symbi.gate.decision=allow symbi.gate.engine=chain
`
	if got != want {
		t.Errorf("spans:\n%s\nwant:\n%s", got, want)
	}
	checkRunIDs(t, spans, res.RunID)
	if res.TraceID != spans[0].SpanContext().TraceID().String() {
		t.Errorf("Result.TraceID %s is not the spans' trace", res.TraceID)
	}
	evs := eventsOf(t, journalOf(t, e, res.RunID), "started")
	var started startedData
	if len(evs) != 1 || evs[0].Decode(&started) != nil || started.TraceID != res.TraceID {
		t.Errorf("started line %+v, want trace id %s", evs, res.TraceID)
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "chat ") {
			for _, k := range []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.request.max_tokens", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons"} {
				if _, ok := attr(s, k); !ok {
					t.Errorf("%s has no %s", s.Name(), k)
				}
			}
			if _, ok := attr(s, "gen_ai.input.messages"); ok {
				t.Errorf("%s records the prompt without capture_content", s.Name())
			}
		}
	}
}

func TestSpansReflect(t *testing.T) {
	p, dir := compileExample(t, "../examples/reflect.hcl")
	e, sr := traced(t, p, dir, nil)
	res := mustRun(t, e, "writer", "In one sentence: why is the sky blue?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	got := tree(sr.Ended(), "symbi.reflection.attempt", "symbi.reflection.verdict")
	want := `invoke_agent writer
  reflect symbi.reflection.attempt=1 symbi.reflection.verdict=revise
    chat writer
    gate respond
    invoke_agent critic
      chat critic
      gate respond
  reflect symbi.reflection.attempt=2 symbi.reflection.verdict=pass
    chat writer
    gate respond
    invoke_agent critic
      chat critic
      gate respond
`
	if got != want {
		t.Errorf("spans:\n%s\nwant:\n%s", got, want)
	}
	checkRunIDs(t, sr.Ended(), res.RunID)
}

func TestSpansPlanExecute(t *testing.T) {
	p, dir := compileExample(t, "../examples/plan_execute.hcl")
	e, sr := traced(t, p, dir, nil)
	res := mustRun(t, e, "", "Is 6 * 7 equal to 100 - 58?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	got := tree(sr.Ended(), "symbi.plan.step.status")
	for _, want := range []string{"invoke_agent planner\n  chat offline\n", "  plan_step ", "    invoke_agent planner\n      chat offline\n      gate calculator\n      execute_tool calculator\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("spans:\n%s\nhave no %q", got, want)
		}
	}
	if n := strings.Count(got, "plan_step "); n != 3 {
		t.Errorf("%d plan_step spans, want 3:\n%s", n, got)
	}
	checkRunIDs(t, sr.Ended(), res.RunID)
}

func TestSpansBestOfN(t *testing.T) {
	p, dir := compileExample(t, "../examples/best_of_n.hcl")
	e, sr := traced(t, p, dir, nil)
	res, err := e.BestOfN(context.Background(), "answer", "What is 6 * 7? Answer with the number only.", RunOptions{})
	if err != nil || res.Termination.Reason != Completed {
		t.Fatalf("%v %s", err, res.Termination)
	}
	spans := sr.Ended()
	got := tree(spans, "symbi.best_of_n.status")
	if n := strings.Count(got, "\n  candidate "); n != 5 {
		t.Errorf("%d candidate spans, want 5:\n%s", n, got)
	}
	if n := strings.Count(got, "\n    invoke_agent solver\n      chat offline\n"); n != 5 {
		t.Errorf("%d candidate runs, want 5:\n%s", n, got)
	}
	if n := strings.Count(got, "\n  score "); n != 5 {
		t.Errorf("%d score spans, want 5:\n%s", n, got)
	}
	var root sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "invoke_agent solver" && !s.Parent().IsValid() {
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no root invoke_agent:\n%s", got)
	}
	if v, _ := attr(root, "symbi.best_of_n.selected"); v.AsInt64() != int64(res.Selected.Index) {
		t.Errorf("selected %v, want %d", v.Emit(), res.Selected.Index)
	}
	if len(root.Events()) != 1 || root.Events()[0].Name != "symbi.best_of_n.selected" {
		t.Errorf("root events %v", root.Events())
	}
	checkRunIDs(t, spans, res.RunID)
}

func TestSpansDelegation(t *testing.T) {
	p, dir := compileExample(t, "../examples/delegation.hcl")
	e, sr := traced(t, p, dir, nil)
	res := mustRun(t, e, "lead", "What is 6 * 7?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	got := tree(sr.Ended(), "symbi.depth")
	for _, want := range []string{"invoke_agent lead\n  chat lead\n  gate agent.researcher\n  invoke_agent researcher symbi.depth=1\n    reflect\n", "      invoke_agent critic symbi.depth=2\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("spans:\n%s\nhave no %q", got, want)
		}
	}
	checkRunIDs(t, sr.Ended(), res.RunID)
}

// TestSpansBudgetExhausted: a run stopped by its budget ends its span with
// an error status that names the limit.
func TestSpansBudgetExhausted(t *testing.T) {
	hcl := strings.Replace(mustRead(t, "../testdata/e2e/telemetry/main.hcl"), `agent "assistant" {`, `budget "tight" {
  max_tool_calls = 1
}

agent "assistant" {
  budget   = budget.tight`, 1)
	p, dir := fixture{"main.hcl": hcl, "scripts/turns.json": mustRead(t, "../testdata/e2e/telemetry/scripts/turns.json")}.compile(t)
	e, sr := traced(t, p, dir, nil)
	res := mustRun(t, e, "", "go", RunOptions{})
	if res.Termination.Reason != BudgetExceeded {
		t.Fatalf("termination %s", res.Termination)
	}
	for _, s := range sr.Ended() {
		if s.Name() == "invoke_agent assistant" {
			if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "max_tool_calls") {
				t.Errorf("status %+v", s.Status())
			}
			if v, _ := attr(s, "symbi.budget.limit"); v.AsString() != "max_tool_calls" {
				t.Errorf("symbi.budget.limit %q", v.AsString())
			}
			return
		}
	}
	t.Fatal("no invoke_agent span")
}

// TestSpansCaptureContent: with capture_content the prompts, completions,
// tool arguments and results are on the spans, and a secret in any of them
// is redacted first; without it none is there.
func TestSpansCaptureContent(t *testing.T) {
	const secret = "sk-telemetry-5f8e2a91c4d7"
	hcl := strings.Replace(mustRead(t, "../testdata/e2e/telemetry/main.hcl"), `argv = ["sh", "-c", "printf '%s' \"$TRACEPARENT\""]`, `argv = ["sh", "-c", "printf 'key %s' \"$KEY\""]
    env  = { KEY = env("TELEMETRY_KEY") }`, 1)
	p, dir := fixture{"main.hcl": hcl, "scripts/turns.json": mustRead(t, "../testdata/e2e/telemetry/scripts/turns.json")}.compile(t)
	e, sr := traced(t, p, dir, func(o *Options) {
		o.CaptureContent = true
		o.LookupEnv = func(n string) (string, bool) {
			if n == "TELEMETRY_KEY" {
				return secret, true
			}
			return "", false
		}
	})
	res := mustRun(t, e, "", "go", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	seen := map[string]bool{}
	for _, s := range sr.Ended() {
		for _, kv := range s.Attributes() {
			v := kv.Value.Emit()
			if strings.Contains(v, secret) {
				t.Errorf("span %s: %s holds the secret: %s", s.Name(), kv.Key, v)
			}
			switch kv.Key {
			case "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result":
				seen[string(kv.Key)] = true
				if kv.Key == "gen_ai.tool.call.result" && strings.HasPrefix(v, "key ") && v != "key [redacted]" {
					t.Errorf("tool result %q: the secret was not replaced", v)
				}
			}
		}
	}
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if !seen[k] {
			t.Errorf("no span has %s", k)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
