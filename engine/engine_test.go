package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/seal"
)

// fixture is a configuration written to a temporary directory: files by
// name, main.hcl among them.
type fixture map[string]string

// compile writes the files and compiles them, failing the test on any
// error diagnostic.
func (f fixture) compile(t testing.TB) (*plan.Plan, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range f {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, diags := interp.Compile(dir, interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatalf("compile: %s", diags.Error())
	}
	return cfg.Plan, cfg.BaseDir
}

// recorder collects what OnEvent receives.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) on(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		switch ev.Type {
		case ContentDelta, ReasoningDelta, ModelFirstEvent, ToolCallDelta:
			// Shown, not journalled: types lists what the journal holds.
		default:
			out = append(out, ev.Type)
		}
	}
	return out
}

func (r *recorder) deltas() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, ev := range r.events {
		if ev.Type == ContentDelta {
			b.WriteString(ev.Delta)
		}
	}
	return b.String()
}

// newEngine builds an engine for p with a recorder and a state directory
// in the test's temporary directory.
func newEngine(t testing.TB, p *plan.Plan, baseDir string, mod func(*Options)) (*Engine, *recorder) {
	t.Helper()
	rec := &recorder{}
	opts := Options{BaseDir: baseDir, StateDir: filepath.Join(t.TempDir(), "state"), OnEvent: rec.on, LookupEnv: func(string) (string, bool) { return "", false }}
	if mod != nil {
		mod(&opts)
	}
	e, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, rec
}

func mustRun(t testing.TB, e *Engine, agent, input string, ro RunOptions) *Result {
	t.Helper()
	res, err := e.Run(context.Background(), agent, input, ro)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// journalOf reads a run's journal, verifying every line's MAC.
func journalOf(t testing.TB, e *Engine, runID string) []journal.Event {
	t.Helper()
	evs, err := journal.ReadRun(e.StateDir(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func eventTypes(evs []journal.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

func TestQuickstart(t *testing.T) {
	cfg, diags := interp.Compile("../examples/quickstart.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e, rec := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res := mustRun(t, e, "", "What is 6 * 7?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination = %s", res.Termination)
	}
	if res.Answer != "6 × 7 is 42." || rec.deltas() != res.Answer {
		t.Errorf("answer %q, streamed %q", res.Answer, rec.deltas())
	}
	if res.Iterations != 2 || res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 1 {
		t.Errorf("iterations %d, usage %+v", res.Iterations, res.Usage)
	}
	want := []string{"started", "model_call_started", "reasoning_complete", "policy_evaluated", "tools_dispatched", "tool_result", "observations_collected", "model_call_started", "reasoning_complete", "policy_evaluated", "terminated"}
	got := eventTypes(journalOf(t, e, res.RunID))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("journal:\n got %v\nwant %v", got, want)
	}
	if strings.Join(rec.types(), " ") != strings.Join(want, " ") {
		t.Errorf("observer saw %v", rec.types())
	}
}

// TestRunSavesEncodedPlan: a run saves the plan's canonical JSON beside its
// journal and records its digest.
func TestRunSavesEncodedPlan(t *testing.T) {
	cfg, diags := interp.Compile("../examples/quickstart.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	want, err := plan.Encode(cfg.Plan)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res := mustRun(t, e, "", "What is 6 * 7?", RunOptions{})
	got, err := os.ReadFile(filepath.Join(journal.RunDir(e.StateDir(), res.RunID), journal.PlanFileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("plan.json is not plan.Encode's:\n%s", got)
	}
	var st journal.StartedData
	if err := json.Unmarshal(journalOf(t, e, res.RunID)[0].Data, &st); err != nil {
		t.Fatal(err)
	}
	if st.PlanDigest != seal.Digest(want) {
		t.Errorf("started line's plan digest %q, want %q", st.PlanDigest, seal.Digest(want))
	}
}
