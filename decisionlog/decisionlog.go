package decisionlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Event is one decision, as OPA's decision-log plugin writes one
// (v1/plugins/logs.EventV1): the fields symbi has a value for.
type Event struct {
	// Labels describe who decided: OPA's id (the process) and version
	// (symbi's), and symbi's engine (rules, opa, cedar, person, chain or
	// engine for the engine's own checks), policy, agent and run.
	Labels     map[string]string `json:"labels"`
	DecisionID string            `json:"decision_id"`
	// TraceID and SpanID are the gate's span, when telemetry is on.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
	// Path is what was asked: a Rego policy's query as a path
	// ("symbi/gate/decision"), for the others the policy's address as one
	// ("policy/readonly").
	Path string `json:"path,omitempty"`
	// Input is the policy input, as the policies saw it.
	Input json.RawMessage `json:"input,omitempty"`
	// Result is the decision: {"decision", "reason", "policy", ...}.
	Result      json.RawMessage `json:"result,omitempty"`
	RequestedBy string          `json:"requested_by,omitempty"`
	Timestamp   time.Time       `json:"timestamp"`
	// Metrics are OPA's timer_*_ns figures: timer_policy_eval_ns for the
	// policy's own evaluation, timer_gate_ns for the whole gate.
	Metrics map[string]any `json:"metrics,omitempty"`
}

// Writer appends events to a file. It is safe for concurrent use: each
// line is one write, whole.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	path string
	err  error // the first write error, reported by Close
}

// Open opens path for appending, creating it (mode 0600: the inputs are the
// runs' actions) and its directory when needed.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	return &Writer{f: f, path: path}, nil
}

// Path is the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// Encode is an event's line, without the newline.
func Encode(ev Event) ([]byte, error) {
	return json.Marshal(ev)
}

// WriteLine appends one encoded event and a newline. A failed write is kept
// and returned by Close as well: a decision log with a gap says so.
func (w *Writer) WriteLine(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return errors.New("decision log: closed")
	}
	_, err := w.f.Write(line)
	if err != nil {
		err = fmt.Errorf("decision log %s: %w", w.path, err)
		if w.err == nil {
			w.err = err
		}
	}
	return err
}

// Close syncs and closes the file, and returns the first error met.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	err := errors.Join(w.err, w.f.Sync(), w.f.Close())
	w.f = nil
	return err
}
