package decisionlog_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/plugins/logs"

	"github.com/symbi-dev/symbi/decisionlog"
)

// sample is a decision as the engine writes one.
func sample(i int) decisionlog.Event {
	return decisionlog.Event{
		Labels:     map[string]string{"id": "5428bd98e26df0e4", "version": "0.1.0", "engine": "cedar", "policy": "policy.grants", "agent": "agent.a", "run_id": "r1"},
		DecisionID: "fc0d9cf6-9cbe-4435-ad9b-1cb380d9cd3" + string(rune('0'+i%10)),
		TraceID:    "c74db5a617de723f03713a54baa02025",
		SpanID:     "12fb4b38f0cee1ee",
		Path:       "policy/grants",
		Input:      json.RawMessage(`{"action":{"type":"tool_call","tool":"read_file","arguments":{"path":"notes.txt"}},"agent":{"name":"a"},"run":{"id":"r1"},"context":{}}`),
		Result:     json.RawMessage(`{"decision":"allow","reason":"permit","policy":"policy.grants","engine":"cedar"}`),
		Timestamp:  time.Date(2026, 12, 3, 12, 2, 9, 90000000, time.UTC),
		Metrics:    map[string]any{"timer_gate_ns": 171600, "timer_policy_eval_ns": 20300},
	}
}

// TestOPAEventV1 decodes every line with OPA's own decision-log event type
// (what OPA's decision-log plugin encodes and its consumers read), refusing
// any field it does not have, and encodes it back: nothing is lost or
// changed.
func TestOPAEventV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	w, err := decisionlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		line, err := decisionlog.Encode(sample(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteLine(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkOPALines(t, path, 3)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
}

// checkOPALines reads a decision log and holds each line to OPA's EventV1.
func checkOPALines(t *testing.T, path string, want int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var ev logs.EventV1
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %d is not an OPA decision-log event: %v\n%s", n, err, line)
		}
		if ev.DecisionID == "" || ev.Path == "" || ev.Input == nil || ev.Result == nil || ev.Timestamp.IsZero() || ev.Labels["id"] == "" || ev.Labels["version"] == "" {
			t.Errorf("line %d lacks a field OPA's consumers read: %+v", n, ev)
		}
		back, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		json.Unmarshal(line, &a)
		json.Unmarshal(back, &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("line %d changed through OPA's EventV1:\n in  %s\n out %s", n, ja, jb)
		}
	}
	if n != want {
		t.Errorf("%d lines, want %d", n, want)
	}
}

// TestConcurrentLines: lines written from many goroutines come out whole.
func TestConcurrentLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	w, err := decisionlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			line, _ := decisionlog.Encode(sample(i))
			w.WriteLine(line)
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checkOPALines(t, path, 50)
	if err := w.WriteLine([]byte("{}")); err == nil {
		t.Error("a write after Close succeeded")
	}
}
