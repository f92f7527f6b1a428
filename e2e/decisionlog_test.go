package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/symbi-dev/symbi/journal"
)

// readDecisionLog decodes a decision log with OPA's own decision-log event
// type, refusing any field it does not have.
func readDecisionLog(t *testing.T, path string) ([]logs.EventV1, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []logs.EventV1
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var ev logs.EventV1
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("not an OPA decision-log event: %v\n%s", err, sc.Text())
		}
		evs = append(evs, ev)
		lines = append(lines, sc.Text())
	}
	return evs, lines
}

// TestDecisionLog: --decision-log writes one OPA decision-log event per
// policy decision of the run (two allows, a deny, the answer's), each
// with its engine in labels, the policy input and the decision, the gate's
// span when tracing is on, and a secret in the model's arguments redacted.
func TestDecisionLog(t *testing.T) {
	t.Parallel()
	const secret = "sk-e2e-decision-7c41d9a2b8"
	dir := fixture(t, "telemetry")
	// The model passes the secret to a tool; the tool's environment makes
	// it a secret of the run.
	script := filepath.Join(dir, "scripts", "turns.json")
	b, _ := os.ReadFile(script)
	os.WriteFile(script, bytes.Replace(b, []byte(`"name": "trace_context", "arguments": {}`), []byte(`"name": "trace_context", "arguments": {"note": "`+secret+`"}`), 1), 0o644)
	main := filepath.Join(dir, "main.hcl")
	b, _ = os.ReadFile(main)
	os.WriteFile(main, bytes.Replace(b, []byte(`argv = ["sh", "-c", "printf '%s' \"$TRACEPARENT\""]`), []byte(`argv = ["sh", "-c", "printf '%s' \"$TRACEPARENT\""]
    env  = { NOTE_KEY = env("E2E_NOTE_KEY") }`), 1), 0o644)

	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	r := symbi(t, call{dir: dir, env: []string{"E2E_NOTE_KEY=" + secret, "OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=none"}},
		"run", "--json", "--decision-log", logPath, ".", "go")
	if r.code != 0 {
		t.Fatalf("run failed\n%s", r)
	}
	evs, lines := readDecisionLog(t, logPath)
	if len(evs) != 4 {
		t.Fatalf("%d decisions, want 4\n%s", len(evs), strings.Join(lines, "\n"))
	}
	stateDir := filepath.Join(dir, ".symbi")
	runID := onlyRun(t, stateDir)
	started := eventsOf[journal.StartedData](t, readJournal(t, stateDir, runID), journal.Started)
	var outcomes []string
	for i, ev := range evs {
		if strings.Contains(lines[i], secret) {
			t.Errorf("decision %d holds the secret:\n%s", i, lines[i])
		}
		if ev.Labels["engine"] != "rules" || ev.Labels["policy"] != "policy.rules" || ev.Path != "policy/rules" || ev.Labels["run_id"] != runID {
			t.Errorf("decision %d: labels %v, path %q", i, ev.Labels, ev.Path)
		}
		if ev.TraceID != started[0].TraceID || len(ev.SpanID) != 16 {
			t.Errorf("decision %d: trace %q span %q, the run's trace %q", i, ev.TraceID, ev.SpanID, started[0].TraceID)
		}
		in, _ := (*ev.Input).(map[string]any)
		if run, _ := in["run"].(map[string]any); run["id"] != runID {
			t.Errorf("decision %d: input %v", i, in)
		}
		res, _ := (*ev.Result).(map[string]any)
		outcomes = append(outcomes, res["decision"].(string))
		if _, ok := ev.Metrics["timer_gate_ns"]; !ok {
			t.Errorf("decision %d: metrics %v", i, ev.Metrics)
		}
	}
	if got := strings.Join(outcomes, " "); got != "allow allow deny not_applicable" {
		t.Errorf("decisions %s", got)
	}
	if !strings.Contains(lines[1], `[redacted]`) {
		t.Errorf("the secret argument is not shown redacted:\n%s", lines[1])
	}

	// The block writes the same, relative to the configuration directory,
	// and a second run appends.
	os.WriteFile(main, append([]byte("symbi {\n  decision_log {\n    path = \"audit/decisions.jsonl\"\n  }\n}\n"), mustReadFile(t, main)...), 0o644)
	os.MkdirAll(filepath.Join(dir, "audit"), 0o755)
	for range 2 {
		if r := symbi(t, call{dir: dir, env: []string{"E2E_NOTE_KEY=" + secret}}, "run", ".", "go"); r.code != 0 {
			t.Fatalf("run failed\n%s", r)
		}
	}
	evs, _ = readDecisionLog(t, filepath.Join(dir, "audit", "decisions.jsonl"))
	if len(evs) != 8 {
		t.Errorf("%d decisions after two runs, want 8", len(evs))
	}
	for _, ev := range evs {
		if ev.TraceID != "" {
			t.Errorf("a trace id without telemetry: %q", ev.TraceID)
		}
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
