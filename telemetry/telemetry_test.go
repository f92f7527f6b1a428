package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/symbi-dev/symbi/plan"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestConfigure(t *testing.T) {
	block := plan.DefaultTelemetry()
	block.Endpoint = "http://collector:4318"
	block.MetricsExporter = "none"
	block.Headers = map[string]plan.String{"x-key": plan.Lit("from-block")}
	for _, c := range []struct {
		name   string
		block  *plan.Telemetry
		env    map[string]string
		check  func(t *testing.T, c Config)
		errHas string
	}{
		{name: "off unless configured", check: func(t *testing.T, c Config) {
			if c.On() {
				t.Errorf("on without a block or a variable: %+v", c)
			}
		}},
		{name: "block", block: &block, check: func(t *testing.T, c Config) {
			if !c.Traces.On() || c.Metrics.On() || c.Traces.Endpoint != "http://collector:4318/v1/traces" || c.Traces.Headers["x-key"] != "from-block" || c.ServiceName != "symbi" {
				t.Errorf("%+v", c)
			}
		}},
		{name: "environment wins", block: &block, env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_HEADERS": "x-key=from%20env", "OTEL_SERVICE_NAME": "svc", "OTEL_METRICS_EXPORTER": "otlp",
			"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
		}, check: func(t *testing.T, c Config) {
			if c.Traces.Protocol != GRPC || c.Traces.Endpoint != "http://other:4317" || c.Traces.Headers["x-key"] != "from env" ||
				c.ServiceName != "svc" || !c.Metrics.On() || c.Sampler != "traceidratio" || c.SamplerArg != 0.25 || !c.CaptureContent {
				t.Errorf("%+v", c)
			}
		}},
		{name: "a signal's own endpoint is used as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x:1/custom"}, check: func(t *testing.T, c Config) {
			if c.Traces.Endpoint != "http://x:1/custom" || c.Metrics.On() {
				t.Errorf("%+v", c)
			}
		}},
		{name: "console only", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, check: func(t *testing.T, c Config) {
			if len(c.Traces.Exporters) != 1 || c.Traces.Exporters[0] != Console || c.Metrics.On() {
				t.Errorf("%+v", c)
			}
		}},
		{name: "disabled", block: &block, env: map[string]string{"OTEL_SDK_DISABLED": "true"}, check: func(t *testing.T, c Config) {
			if c.On() {
				t.Errorf("on with OTEL_SDK_DISABLED: %+v", c)
			}
		}},
		{name: "bad exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, errHas: `OTEL_TRACES_EXPORTER "jaeger"`},
		{name: "bad protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, errHas: "http/json"},
		{name: "bad header", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1", "OTEL_EXPORTER_OTLP_HEADERS": "secret-token"}, errHas: "key=value"},
		{name: "bad ratio", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1", "OTEL_TRACES_SAMPLER_ARG": "2"}, errHas: "OTEL_TRACES_SAMPLER_ARG"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Configure(c.block, env(c.env))
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("error %v, want one naming %q", err, c.errHas)
				}
				if strings.Contains(err.Error(), "secret-token") {
					t.Errorf("the error quotes a header: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

// emit makes one span tree and one of each metric instrument kind.
func emit(tel *Telemetry) {
	tr := tel.Tracer.Tracer("test")
	ctx, root := tr.Start(context.Background(), "invoke_agent a", trace.WithAttributes(attribute.String("symbi.run.id", "r1"), attribute.StringSlice("list", []string{"x", "y"})))
	_, child := tr.Start(ctx, "gate calculator", trace.WithAttributes(attribute.String("symbi.gate.decision", "deny")))
	child.AddEvent("symbi.policy.decision", trace.WithAttributes(attribute.Int("n", 1)))
	child.End()
	root.SetStatus(codes.Error, "budget exhausted: max_tool_calls")
	root.End()
	if tel.Meter != nil {
		m := tel.Meter.Meter("test")
		c, _ := m.Int64Counter("symbi.gate.decisions", metric.WithUnit("{decision}"), metric.WithDescription("Gate decisions"))
		c.Add(ctx, 3, metric.WithAttributes(attribute.String("symbi.gate.engine", "rules")))
		h, _ := m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
		h.Record(ctx, 0.5, metric.WithAttributes(attribute.String("gen_ai.request.model", "gpt \"quoted\"")))
	}
}

// checkSpans decodes an Export request with the collector's own type.
func checkSpans(t *testing.T, body []byte) {
	t.Helper()
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		t.Fatalf("not an ExportTraceServiceRequest: %v", err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("%v", &req)
	}
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	child, root := spans[0], spans[1]
	if root.Name != "invoke_agent a" || child.Name != "gate calculator" || string(child.ParentSpanId) != string(root.SpanId) || string(child.TraceId) != string(root.TraceId) {
		t.Errorf("tree: %v", spans)
	}
	if root.Status.GetCode().String() != "STATUS_CODE_ERROR" || root.Status.GetMessage() != "budget exhausted: max_tool_calls" {
		t.Errorf("status %v", root.Status)
	}
	if len(child.Events) != 1 || child.Events[0].Name != "symbi.policy.decision" {
		t.Errorf("events %v", child.Events)
	}
	var svc string
	for _, kv := range req.ResourceSpans[0].Resource.Attributes {
		if kv.Key == "service.name" {
			svc = kv.Value.GetStringValue()
		}
	}
	if svc != "svc-test" {
		t.Errorf("service.name %q", svc)
	}
}

// TestOTLPHTTP: spans and metrics reach an http/protobuf collector, with
// the headers, as the collector's own types decode them.
func TestOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	got := map[string][][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("X-Key") != "k1" {
			http.Error(w, "bad headers", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	cfg, err := Configure(nil, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "x-key=k1", "OTEL_SERVICE_NAME": "svc-test"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Fail = true // the probes must succeed
	tel, err := Start(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	emit(tel)
	tel.Shutdown(context.Background())
	mu.Lock()
	defer mu.Unlock()
	traces := got["/v1/traces"]
	if len(traces) != 2 || len(traces[0]) != 0 {
		t.Fatalf("trace requests %d (the probe, empty, then the spans)", len(traces))
	}
	checkSpans(t, traces[1])
	metrics := got["/v1/metrics"]
	if len(metrics) < 2 {
		t.Fatalf("%d metric requests", len(metrics))
	}
	var req colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(metrics[len(metrics)-1], &req); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, sm := range req.ResourceMetrics[0].ScopeMetrics {
		for _, m := range sm.Metrics {
			names[m.Name] = true
			if m.Name == "symbi.gate.decisions" && m.GetSum().GetDataPoints()[0].GetAsInt() != 3 {
				t.Errorf("counter %v", m)
			}
			if m.Name == "gen_ai.client.operation.duration" && m.GetHistogram().GetDataPoints()[0].GetCount() != 1 {
				t.Errorf("histogram %v", m)
			}
		}
	}
	if !names["symbi.gate.decisions"] || !names["gen_ai.client.operation.duration"] {
		t.Errorf("metrics %v", names)
	}
}

type traceCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
	md   []string
}

func (c *traceCollector) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLPGRPC: spans reach a collector served by grpc-go itself, the
// client speaking gRPC over HTTP/2 with net/http.
func TestOTLPGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	col := &traceCollector{}
	coltracepb.RegisterTraceServiceServer(gs, col)
	go gs.Serve(ln)
	defer gs.Stop()
	cfg, err := Configure(nil, env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + ln.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "svc-test"}))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Fail = true
	tel, err := Start(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	emit(tel)
	tel.Shutdown(context.Background())
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.reqs) != 2 {
		t.Fatalf("%d requests, want the probe and the spans", len(col.reqs))
	}
	b, _ := proto.Marshal(col.reqs[1])
	checkSpans(t, b)

	// A gRPC error status is an error that names it.
	c, _ := newOTLPClient(Signal{Endpoint: "http://" + ln.Addr().String(), Protocol: GRPC, Timeout: time.Second}, "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export", "")
	if err := c.export(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "UNIMPLEMENTED") {
		t.Errorf("an unregistered service: %v", err)
	}
}

// TestFailRefusesDeadCollector: with on_failure = "fail", Start refuses a
// collector that does not answer; otherwise it starts, and Shutdown
// returns within the grace and warns.
func TestFailRefusesDeadCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	cfg, _ := Configure(nil, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": dead, "OTEL_METRICS_EXPORTER": "none"}))
	cfg.Fail = true
	if _, err := Start(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Start with a dead collector and fail: %v", err)
	}
	cfg.Fail = false
	var stderr strings.Builder
	tel, err := Start(context.Background(), cfg, Options{Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	emit(tel)
	start := time.Now()
	tel.Shutdown(context.Background())
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if !strings.Contains(stderr.String(), "did not answer") {
		t.Errorf("no warning: %q", stderr.String())
	}
}

// TestPrometheus: --metrics-addr serves what Prometheus's own text parser
// reads, names and units translated.
func TestPrometheus(t *testing.T) {
	tel, err := Start(context.Background(), Config{}, Options{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	tel.Tracer = nil
	m := tel.Meter.Meter("test")
	c, _ := m.Int64Counter("symbi.gate.decisions", metric.WithUnit("{decision}"), metric.WithDescription("Gate decisions"))
	c.Add(context.Background(), 3, metric.WithAttributes(attribute.String("symbi.gate.engine", "rules")))
	h, _ := m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(0.1, 1))
	h.Record(context.Background(), 0.5, metric.WithAttributes(attribute.String("gen_ai.request.model", "gpt \"quoted\"\n")))
	resp, err := http.Get(tel.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("Prometheus cannot parse it: %v\n%s", err, body)
	}
	ctr := fams["symbi_gate_decisions_total"]
	if ctr == nil || ctr.GetType().String() != "COUNTER" || ctr.Metric[0].GetCounter().GetValue() != 3 || ctr.Metric[0].Label[0].GetName() != "symbi_gate_engine" {
		t.Errorf("counter %v\n%s", ctr, body)
	}
	hist := fams["gen_ai_client_operation_duration_seconds"]
	if hist == nil || hist.Metric[0].GetHistogram().GetSampleCount() != 1 || len(hist.Metric[0].GetHistogram().Bucket) != 3 ||
		hist.Metric[0].Label[0].GetValue() != "gpt \"quoted\"\n" {
		t.Errorf("histogram %v\n%s", hist, body)
	}
}

func TestJoin(t *testing.T) {
	ctx := Join(context.Background(), env(map[string]string{"TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "TRACESTATE": "v=1"}))
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsRemote() || sc.TraceState().Get("v") != "1" {
		t.Errorf("%+v", sc)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if sc := trace.SpanContextFromContext(Join(context.Background(), env(map[string]string{"TRACEPARENT": bad}))); sc.IsValid() {
			t.Errorf("TRACEPARENT %q joined %v", bad, sc)
		}
	}
}
