package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// jaegerConfig is a Jaeger v2 all-in-one on loopback: OTLP over grpc and
// http/protobuf in, memory storage, the query API out. Its ports come from
// the environment the test gives it.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:${env:JAEGER_QUERY_HTTP}
    grpc:
      endpoint: 127.0.0.1:${env:JAEGER_QUERY_GRPC}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:JAEGER_OTLP_GRPC}
      http:
        endpoint: 127.0.0.1:${env:JAEGER_OTLP_HTTP}
processors:
  batch:
    timeout: 20ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// jaeger is a running Jaeger: where it takes OTLP and where it answers
// queries.
type jaeger struct {
	otlpHTTP, otlpGRPC, query string
}

// startJaeger starts the Jaeger binary SYMBI_JAEGER names (scripts/jaeger.sh
// builds it), or skips the test without one. It is stopped when the test
// ends.
func startJaeger(t *testing.T) jaeger {
	t.Helper()
	bin := os.Getenv("SYMBI_JAEGER")
	if bin == "" {
		t.Skip("SYMBI_JAEGER is not set: build Jaeger v2 with SYMBI_JAEGER=$(scripts/jaeger.sh) to run the end-to-end telemetry test")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SYMBI_JAEGER=%s: %v", bin, err)
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "jaeger.yaml", jaegerConfig)
	ports := freePorts(t, 4)
	j := jaeger{
		otlpHTTP: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		otlpGRPC: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		query:    fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("JAEGER_OTLP_HTTP=%d", ports[0]), fmt.Sprintf("JAEGER_OTLP_GRPC=%d", ports[1]),
		fmt.Sprintf("JAEGER_QUERY_HTTP=%d", ports[2]), fmt.Sprintf("JAEGER_QUERY_GRPC=%d", ports[3]))
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger did not answer on %s within a minute\n%s", j.query, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts are n loopback ports free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) tag(key string) (string, bool) {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value), true
		}
	}
	return "", false
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// trace reads a trace back, waiting until it holds want spans (Jaeger
// stores a batch a moment after it takes it).
func (j jaeger) trace(t *testing.T, traceID string, want int) []jaegerSpan {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var spans []jaegerSpan
	for {
		resp, err := http.Get(j.query + "/api/traces/" + traceID)
		if err == nil {
			var body struct {
				Data []struct {
					TraceID string       `json:"traceID"`
					Spans   []jaegerSpan `json:"spans"`
				} `json:"data"`
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if json.Unmarshal(b, &body) == nil && len(body.Data) == 1 {
				spans = body.Data[0].Spans
				if len(spans) >= want {
					return spans
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans in Jaeger after 30s, want %d", traceID, len(spans), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// summaryOf is the summary line of a --json run.
func summaryOf(t *testing.T, stdout string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["event"] == "summary" {
			return m
		}
	}
	t.Fatalf("no summary line in\n%s", stdout)
	return nil
}

// TestTelemetryJaeger sends a react run with two allowed tool calls and one
// denied to a real Jaeger, over both OTLP protocols, and reads the trace
// back through Jaeger's query API: one trace, the spans the run made with
// their parents and key attributes, the denied gate, the trace id the
// journal and the summary name, and the trace context a command tool got.
func TestTelemetryJaeger(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	for _, proto := range []struct{ name, endpoint string }{{"http/protobuf", j.otlpHTTP}, {"grpc", j.otlpGRPC}} {
		t.Run(strings.ReplaceAll(proto.name, "/", "_"), func(t *testing.T) {
			dir := fixture(t, "telemetry")
			r := symbi(t, call{dir: dir, env: []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + proto.endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL=" + proto.name,
				"OTEL_METRICS_EXPORTER=none",
				"OTEL_SERVICE_NAME=symbi-e2e",
			}}, "run", "--json", ".", "go")
			if r.code != 0 {
				t.Fatalf("run failed\n%s", r)
			}
			if strings.Contains(r.stderr, "telemetry") {
				t.Errorf("telemetry warned about a collector that answers:\n%s", r.stderr)
			}
			traceID, _ := summaryOf(t, r.stdout)["trace_id"].(string)
			if len(traceID) != 32 {
				t.Fatalf("summary trace_id %q\n%s", traceID, r)
			}
			stateDir := filepath.Join(dir, ".symbi")
			runID := onlyRun(t, stateDir)
			evs := readJournal(t, stateDir, runID)
			started := eventsOf[journal.StartedData](t, evs, journal.Started)
			if len(started) != 1 || started[0].TraceID != traceID {
				t.Fatalf("journal's started line names trace %+v, the summary %s", started, traceID)
			}

			spans := j.trace(t, traceID, 9)
			var names []string
			byID := map[string]jaegerSpan{}
			var root jaegerSpan
			for _, s := range spans {
				names = append(names, s.OperationName)
				byID[s.SpanID] = s
				if s.TraceID != traceID {
					t.Errorf("span %s is in trace %s", s.OperationName, s.TraceID)
				}
				if id, _ := s.tag("symbi.run.id"); id != runID {
					t.Errorf("span %s: symbi.run.id %q, want %q", s.OperationName, id, runID)
				}
				if s.OperationName == "invoke_agent assistant" {
					root = s
				}
			}
			slices.Sort(names)
			want := []string{"chat offline", "chat offline", "execute_tool calculator", "execute_tool trace_context",
				"gate calculator", "gate calculator", "gate respond", "gate trace_context", "invoke_agent assistant"}
			if !slices.Equal(names, want) {
				t.Fatalf("spans\n got %v\nwant %v", names, want)
			}
			if root.parent() != "" {
				t.Errorf("invoke_agent has a parent %s", root.parent())
			}
			denied := 0
			for _, s := range spans {
				if s.SpanID != root.SpanID && s.parent() != root.SpanID {
					t.Errorf("%s: parent %s, want the run's span %s", s.OperationName, s.parent(), root.SpanID)
				}
				switch {
				case strings.HasPrefix(s.OperationName, "chat "):
					for _, k := range []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons"} {
						if _, ok := s.tag(k); !ok {
							t.Errorf("%s has no %s", s.OperationName, k)
						}
					}
				case strings.HasPrefix(s.OperationName, "execute_tool "):
					if name, _ := s.tag("gen_ai.tool.name"); "execute_tool "+name != s.OperationName {
						t.Errorf("%s: gen_ai.tool.name %q", s.OperationName, name)
					}
					if id, _ := s.tag("gen_ai.tool.call.id"); id == "" {
						t.Errorf("%s has no gen_ai.tool.call.id", s.OperationName)
					}
				case strings.HasPrefix(s.OperationName, "gate "):
					d, _ := s.tag("symbi.gate.decision")
					engine, _ := s.tag("symbi.gate.engine")
					if d == "deny" {
						denied++
						id, _ := s.tag("gen_ai.tool.call.id")
						reason, _ := s.tag("symbi.gate.reason")
						if id != "call_3" || engine != "rules" || !strings.Contains(reason, "deny rule") {
							t.Errorf("denied gate: call %q, engine %q, reason %q", id, engine, reason)
						}
					}
				}
			}
			if denied != 1 {
				t.Errorf("%d denied gates in the trace, want 1", denied)
			}
			// The command tool ran under its execute_tool span, whose
			// context it was given as TRACEPARENT.
			var tp string
			for _, res := range eventsOf[journal.ToolResultData](t, evs, journal.ToolResult) {
				if res.Tool == "trace_context" {
					tp = res.Output
				}
			}
			parts := strings.Split(tp, "-")
			if len(parts) != 4 || parts[1] != traceID || byID[parts[2]].OperationName != "execute_tool trace_context" {
				t.Errorf("TRACEPARENT the command tool saw: %q", tp)
			}
		})
	}
}

// TestTelemetryJoinsTraceparent: a run started with TRACEPARENT in its
// environment is a span of that trace, under that parent.
func TestTelemetryJoinsTraceparent(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	const parentTrace, parentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	dir := fixture(t, "telemetry")
	r := symbi(t, call{dir: dir, env: []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.otlpHTTP, "OTEL_METRICS_EXPORTER=none",
		"TRACEPARENT=00-" + parentTrace + "-" + parentSpan + "-01",
	}}, "run", "--json", ".", "go")
	if r.code != 0 {
		t.Fatalf("run failed\n%s", r)
	}
	if id := summaryOf(t, r.stdout)["trace_id"]; id != parentTrace {
		t.Fatalf("trace_id %v, want the parent's %s", id, parentTrace)
	}
	for _, s := range j.trace(t, parentTrace, 9) {
		if s.OperationName == "invoke_agent assistant" && s.parent() != parentSpan {
			t.Errorf("the run's span has parent %q, want %s", s.parent(), parentSpan)
		}
	}
}

// TestTelemetryDeadCollector: a collector that refuses connections, or
// accepts them and never answers, changes neither how a run ends nor how
// long it takes: the run's own time is that of a run without telemetry,
// within noise, and the process waits past it at most the grace
// telemetry.Shutdown gives a collector that has not answered (250ms), with
// a warning that the spans were lost.
func TestTelemetryDeadCollector(t *testing.T) {
	t.Parallel()
	refused := freePorts(t, 1)[0]
	hanging, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hanging.Close()
	go func() {
		var held []net.Conn // accepted, never read from or answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := hanging.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	run := func(env ...string) (result, float64) {
		dir := fixture(t, "telemetry")
		r := symbi(t, call{dir: dir, env: env}, "run", "--json", ".", "go")
		ms, _ := summaryOf(t, r.stdout)["elapsed_ms"].(float64)
		return r, ms
	}
	// Each case runs five times, interleaved with five runs without
	// telemetry, so both see the same load; "within noise" is against the
	// spread of the runs without: the best run with telemetry is no slower
	// than the slowest without (plus a margin), and the process waits past
	// that at most the grace.
	for _, c := range []struct{ name, endpoint, proto string }{
		{"refused_http", fmt.Sprintf("http://127.0.0.1:%d", refused), "http/protobuf"},
		{"hanging_http", "http://" + hanging.Addr().String(), "http/protobuf"},
		{"refused_grpc", fmt.Sprintf("http://127.0.0.1:%d", refused), "grpc"},
		{"hanging_grpc", "http://" + hanging.Addr().String(), "grpc"},
	} {
		var offMS, onMS []float64
		var offWall, onWall []time.Duration
		var on, off result
		for range 5 {
			var ms float64
			off, ms = run("OTEL_SDK_DISABLED=true")
			offMS, offWall = append(offMS, ms), append(offWall, off.elapsed)
			var onms float64
			on, onms = run("OTEL_EXPORTER_OTLP_ENDPOINT="+c.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+c.proto)
			onMS, onWall = append(onMS, onms), append(onWall, on.elapsed)
			if on.code != off.code || on.code != 0 {
				t.Errorf("%s: exit %d, without telemetry %d\n%s", c.name, on.code, off.code, on)
			}
			if !strings.Contains(on.stderr, "telemetry: the trace collector at") {
				t.Errorf("%s: no warning about the lost spans\n%s", c.name, on.stderr)
			}
		}
		if best, worst := slices.Min(onMS), slices.Max(offMS); best > worst+50 {
			t.Errorf("%s: the run took at best %.0fms, and at worst %.0fms without telemetry", c.name, best, worst)
		}
		if best, worst := slices.Min(onWall), slices.Max(offWall); best > worst+250*time.Millisecond+250*time.Millisecond {
			t.Errorf("%s: the process took at best %v, and at worst %v without telemetry (grace 250ms)", c.name, best, worst)
		}
		t.Logf("%s: run %v ms, process %v; without telemetry %v ms, %v", c.name, onMS, onWall, offMS, offWall)
	}
}

// TestReplMetricsEndpoint: a REPL session started with --metrics-addr
// serves the metrics of the runs it makes, in Prometheus's text format,
// while it runs.
func TestReplMetricsEndpoint(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "telemetry")
	port := freePorts(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, symbiBin, "repl", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), ".")
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	io.WriteString(stdin, ":run agent.assistant \"go\"\n")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), "refused") {
		if time.Now().After(deadline) {
			t.Fatalf("no answer from :run\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`symbi_gate_decisions_total{symbi_gate_decision="deny",symbi_gate_engine="rules"} 1`,
		`symbi_gate_decisions_total{symbi_gate_decision="allow",symbi_gate_engine="rules"} 2`,
		`symbi_tool_calls_total{gen_ai_tool_name="calculator",symbi_tool_outcome="ok"} 1`,
		`gen_ai_client_token_usage_bucket{`,
		`symbi_run_duration_seconds_count{gen_ai_agent_name="assistant",symbi_termination="completed"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics have no %s\n%s", want, body)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunHelpTeachesTelemetry: `symbi run --help` says how telemetry is
// turned on (it is off unless configured) and where it is documented.
func TestRunHelpTeachesTelemetry(t *testing.T) {
	t.Parallel()
	r := symbi(t, call{}, "run", "--help")
	if r.code != 0 {
		t.Fatalf("run --help failed\n%s", r)
	}
	for _, want := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER=console", "TRACEPARENT", "--decision-log", "docs/telemetry.md"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run --help does not mention %s:\n%s", want, r.stdout)
		}
	}
}
