package temporal

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// compile compiles a configuration (a file or a directory), failing the
// test on any error.
func compile(t testing.TB, path string) (*plan.Plan, string) {
	t.Helper()
	cfg, diags := interp.Compile(path, interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatalf("compile %s: %s", path, diags.Error())
	}
	return cfg.Plan, cfg.BaseDir
}

// files writes a configuration into a new directory and returns it.
func files(t testing.TB, fs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range fs {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// local runs the agent on the local engine and returns its result and
// events (deltas left out).
func local(t testing.TB, p *plan.Plan, base, agent, input string) (*engine.Result, []engine.Event) {
	t.Helper()
	var evs []engine.Event
	e, err := engine.New(p, engine.Options{BaseDir: base, StateDir: t.TempDir(), OnEvent: func(ev engine.Event) {
		if ev.Type != engine.ContentDelta && ev.Type != engine.ReasoningDelta {
			evs = append(evs, ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Run(context.Background(), agent, input, engine.RunOptions{NoJournal: true})
	if err != nil {
		t.Fatal(err)
	}
	return res, evs
}

// env is a test workflow environment with the workflow and activities of
// base registered and the plan's engine prepared (no client to ask).
func env(t testing.TB, base string) (*testsuite.TestWorkflowEnvironment, *Activities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	te := s.NewTestWorkflowEnvironment()
	acts := Register(te, nil, WorkerOptions{BaseDir: base})
	t.Cleanup(func() { acts.Close() })
	return te, acts
}

func start(t testing.TB, acts *Activities, p *plan.Plan, agent, input string) contract.Start {
	t.Helper()
	in, err := contract.NewStart(p, acts.BaseDir, agent, input)
	if err != nil {
		t.Fatal(err)
	}
	if err := acts.Prepare(in); err != nil {
		t.Fatal(err)
	}
	return in
}

// outcome runs the workflow to its end and returns its output and the
// events the query serves (deltas left out).
func outcome(t testing.TB, te *testsuite.TestWorkflowEnvironment) (contract.Output, []engine.Event) {
	t.Helper()
	if !te.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := te.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var out contract.Output
	if err := te.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	v, err := te.QueryWorkflow(contract.EventsQuery, 0)
	if err != nil {
		t.Fatal(err)
	}
	var evs Events
	if err := v.Get(&evs); err != nil {
		t.Fatal(err)
	}
	var kept []engine.Event
	for _, ev := range evs.Events {
		if ev.Type != engine.ContentDelta && ev.Type != engine.ReasoningDelta {
			kept = append(kept, ev)
		}
	}
	return out, kept
}

// timeline is what two runs of one plan must agree on, event by event:
// the type, the iteration, the agent and the data without durations.
func timeline(t testing.TB, evs []engine.Event) []string {
	t.Helper()
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		if ev.Type == journal.ModelFirstEvent {
			continue // shown live, not journalled, and sent when the stream's timing allows
		}
		var data map[string]any
		if len(ev.Data) > 0 {
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
		}
		stripTimes(data)
		b, _ := json.Marshal(data)
		out = append(out, ev.Type+" "+ev.Agent+" "+string(rune('0'+ev.Iteration))+" "+string(b))
	}
	return out
}

// stripTimes removes what differs between any two runs: durations, clocks,
// the base directory and the run ids of sub-runs (a local run without a
// journal names none; a workflow's are its child workflows').
func stripTimes(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "duration_ms", "elapsed_ms", "base_dir", "at", "created", "expires", "elapsed_ns", "first_event_ms", "after_ms", "run_id":
				delete(v, k)
			default:
				stripTimes(x)
			}
		}
	case []any:
		for _, x := range v {
			stripTimes(x)
		}
	}
}

// same fails unless the workflow's output and timeline are the local
// engine's.
func same(t *testing.T, want *engine.Result, wantEvs []engine.Event, got contract.Output, gotEvs []engine.Event) {
	t.Helper()
	if got.Answer != want.Answer || got.Termination.Reason != string(want.Termination.Reason) || got.Usage != want.Usage || got.Iterations != want.Iterations {
		t.Errorf("workflow: %q %s %+v %d iterations\nlocal:    %q %s %+v %d iterations",
			got.Answer, got.Termination.Reason, got.Usage, got.Iterations, want.Answer, want.Termination.Reason, want.Usage, want.Iterations)
	}
	a, b := timeline(t, wantEvs), timeline(t, gotEvs)
	if !slices.Equal(a, b) {
		t.Errorf("timelines differ:\nlocal:\n%s\nworkflow:\n%s", join(a), join(b))
	}
}

func join(l []string) string {
	s := ""
	for _, x := range l {
		s += "  " + x + "\n"
	}
	return s
}

func TestQuickstartMatchesLocal(t *testing.T) {
	p, base := compile(t, "../examples/quickstart.hcl")
	want, wantEvs := local(t, p, base, "", "What is 6 * 7?")
	te, acts := env(t, base)
	in := start(t, acts, p, "", "What is 6 * 7?")
	te.ExecuteWorkflow(contract.Workflow, in)
	got, gotEvs := outcome(t, te)
	if got.Answer != "6 × 7 is 42." {
		t.Fatalf("answer %q", got.Answer)
	}
	same(t, want, wantEvs, got, gotEvs)
}
