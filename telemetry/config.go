package telemetry

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
)

// Exporter names, as OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER spell them.
const (
	OTLP       = "otlp"
	Console    = "console"
	None       = "none"
	Prometheus = "prometheus" // metrics only
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL that symbi speaks.
const (
	GRPC         = "grpc"
	HTTPProtobuf = "http/protobuf"
)

// DefaultExportTimeout is OTEL_EXPORTER_OTLP_TIMEOUT's default, the
// specification's 10 seconds.
const DefaultExportTimeout = 10 * time.Second

// Config is the telemetry of one process, resolved: the plan's telemetry
// block with the environment over it. The zero Config is off.
type Config struct {
	Traces  Signal
	Metrics Signal
	// ServiceName and ResourceAttributes describe the process
	// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
	ServiceName        string
	ResourceAttributes map[string]string
	// Sampler is an OTEL_TRACES_SAMPLER value and SamplerArg its ratio.
	Sampler    string
	SamplerArg float64
	// CaptureContent puts prompts, completions, tool arguments and results
	// on the spans, after the engine's secret redactor.
	CaptureContent bool
	// Fail makes Start return an error when an exporter cannot be set up
	// or its collector does not answer (on_failure = "fail").
	Fail bool
	// Batch is how ended spans are batched for an OTLP exporter
	// (OTEL_BSP_*); zero fields take DefaultBatch's.
	Batch Batch
	// Source says where the configuration came from, for messages:
	// "the telemetry block", "the environment" or both.
	Source string
}

// Signal is the export of one signal (traces or metrics).
type Signal struct {
	// Exporters is what the signal is sent to: otlp, console, prometheus
	// (metrics); empty: the signal is off.
	Exporters []string
	Protocol  string // grpc | http/protobuf, for otlp
	// Endpoint is the full URL the OTLP exporter sends to (for
	// http/protobuf, with /v1/traces or /v1/metrics).
	Endpoint string
	// Headers go with every OTLP export; secrets.
	Headers map[string]string
	// Timeout bounds one export (OTEL_EXPORTER_OTLP_TIMEOUT).
	Timeout time.Duration
	// Compression is "gzip" or "" (OTEL_EXPORTER_OTLP_COMPRESSION).
	Compression string
}

// On reports whether the signal is exported anywhere.
func (s Signal) On() bool { return len(s.Exporters) > 0 }

func (s Signal) has(name string) bool {
	for _, e := range s.Exporters {
		if e == name {
			return true
		}
	}
	return false
}

// On reports whether anything is set up.
func (c Config) On() bool { return c.Traces.On() || c.Metrics.On() }

// Configure resolves the telemetry of a run from the plan's telemetry block
// (nil without one) and the environment, read through lookup. Header values
// that call env() are evaluated here. Traces and metrics are on when the
// block is there or an OTEL_* variable asks for them (an exporter, an
// endpoint), unless OTEL_SDK_DISABLED is true; the environment wins over
// the block for every setting it has.
func Configure(t *plan.Telemetry, lookup func(string) (string, bool)) (Config, error) {
	env := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return Config{}, nil
	}
	block := plan.DefaultTelemetry()
	if t != nil {
		block = *t
	}
	cfg := Config{ServiceName: block.ServiceName, Sampler: block.Sampler, SamplerArg: 1, CaptureContent: block.CaptureContent, Fail: block.OnFailure == "fail"}
	var sources []string
	if t != nil {
		sources = append(sources, "the telemetry block")
	}
	var errs []error
	usedEnv := false
	pick := func(name, def string) string {
		if v := env(name); v != "" {
			usedEnv = true
			return v
		}
		return def
	}

	var headers map[string]string
	for k, v := range block.Headers {
		s, err := eval.String(v, lookup)
		if err != nil {
			errs = append(errs, fmt.Errorf("telemetry headers %q: %w", k, err))
			continue
		}
		if headers == nil {
			headers = map[string]string{}
		}
		headers[k] = s
	}
	timeout := DefaultExportTimeout
	if v := env("OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			errs = append(errs, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q: want a positive number of milliseconds", v))
		} else {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}

	signal := func(name, exporterVar, blockExporter, path string) Signal {
		upper := strings.ToUpper(name)
		endpointVar := "OTEL_EXPORTER_OTLP_" + upper + "_ENDPOINT"
		asked := t != nil || env(exporterVar) != "" || env(endpointVar) != "" || env("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
		if !asked {
			return Signal{}
		}
		var s Signal
		list := pick(exporterVar, blockExporter)
		for _, e := range strings.Split(list, ",") {
			e = strings.TrimSpace(e)
			switch {
			case e == None:
				s.Exporters = nil
				return s
			case e == OTLP || e == Console || (e == Prometheus && name == "metrics"):
				s.Exporters = append(s.Exporters, e)
			default:
				want := "otlp, console or none"
				if name == "metrics" {
					want = "otlp, console, prometheus or none"
				}
				errs = append(errs, fmt.Errorf("%s %q: not one of %s", exporterVarOr(exporterVar, env(exporterVar) != "", name), e, want))
			}
		}
		if !s.has(OTLP) {
			return s
		}
		s.Protocol = pick("OTEL_EXPORTER_OTLP_"+upper+"_PROTOCOL", pick("OTEL_EXPORTER_OTLP_PROTOCOL", block.Protocol))
		if s.Protocol != GRPC && s.Protocol != HTTPProtobuf {
			errs = append(errs, fmt.Errorf("OTLP protocol %q: symbi exports over grpc or http/protobuf", s.Protocol))
		}
		switch {
		case env(endpointVar) != "":
			usedEnv = true
			s.Endpoint = env(endpointVar) // used as it is, by the specification
		case env("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
			usedEnv = true
			s.Endpoint = signalURL(env("OTEL_EXPORTER_OTLP_ENDPOINT"), s.Protocol, path)
		case block.Endpoint != "":
			s.Endpoint = signalURL(block.Endpoint, s.Protocol, path)
		case s.Protocol == GRPC:
			s.Endpoint = "http://localhost:4317"
		default:
			s.Endpoint = "http://localhost:4318" + path
		}
		if u, err := url.Parse(s.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL with a host", s.Endpoint))
		}
		s.Headers = headers
		for _, v := range []string{"OTEL_EXPORTER_OTLP_" + upper + "_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
			if raw := env(v); raw != "" {
				usedEnv = true
				h, err := parseHeaders(raw)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", v, err))
				}
				s.Headers = h
				break
			}
		}
		s.Timeout = timeout
		switch c := pick("OTEL_EXPORTER_OTLP_"+upper+"_COMPRESSION", pick("OTEL_EXPORTER_OTLP_COMPRESSION", "none")); c {
		case "gzip":
			s.Compression = c
		case "none":
		default:
			errs = append(errs, fmt.Errorf("OTLP compression %q: gzip or none", c))
		}
		return s
	}
	cfg.Traces = signal("traces", "OTEL_TRACES_EXPORTER", block.TracesExporter, "/v1/traces")
	cfg.Metrics = signal("metrics", "OTEL_METRICS_EXPORTER", block.MetricsExporter, "/v1/metrics")
	if !cfg.On() {
		return Config{}, errors.Join(errs...)
	}

	cfg.ServiceName = pick("OTEL_SERVICE_NAME", cfg.ServiceName)
	if raw := env("OTEL_RESOURCE_ATTRIBUTES"); raw != "" {
		usedEnv = true
		attrs, err := parseHeaders(raw) // the same k=v,k=v form, percent-encoded
		if err != nil {
			errs = append(errs, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err))
		}
		cfg.ResourceAttributes = attrs
		if n, ok := attrs["service.name"]; ok && env("OTEL_SERVICE_NAME") == "" {
			cfg.ServiceName = n
		}
	}
	cfg.Sampler = pick("OTEL_TRACES_SAMPLER", cfg.Sampler)
	switch cfg.Sampler {
	case "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio":
	default:
		errs = append(errs, fmt.Errorf("sampler %q: not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio", cfg.Sampler))
	}
	if block.SamplerArg != nil {
		cfg.SamplerArg = *block.SamplerArg
	}
	if v := env("OTEL_TRACES_SAMPLER_ARG"); v != "" {
		usedEnv = true
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			errs = append(errs, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio between 0 and 1", v))
		} else {
			cfg.SamplerArg = f
		}
	}
	if v := env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"); v != "" {
		usedEnv = true
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=%q: want true or false", v))
		}
		cfg.CaptureContent = b
	}
	// The batch span processor's settings, read as the SDK's processor
	// reads them: a value that is not a positive integer is ignored.
	for _, v := range []struct {
		name string
		set  func(int)
	}{
		{"OTEL_BSP_SCHEDULE_DELAY", func(n int) { cfg.Batch.Delay = time.Duration(n) * time.Millisecond }},
		{"OTEL_BSP_EXPORT_TIMEOUT", func(n int) { cfg.Batch.Timeout = time.Duration(n) * time.Millisecond }},
		{"OTEL_BSP_MAX_QUEUE_SIZE", func(n int) { cfg.Batch.MaxQueue = n }},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", func(n int) { cfg.Batch.MaxBatch = n }},
	} {
		if n, err := strconv.Atoi(env(v.name)); err == nil && n > 0 {
			v.set(n)
		}
	}
	if usedEnv {
		sources = append(sources, "the environment")
	}
	cfg.Source = strings.Join(sources, " and ")
	return cfg, errors.Join(errs...)
}

func exporterVarOr(v string, fromEnv bool, signal string) string {
	if fromEnv {
		return v
	}
	return "telemetry " + signal + "_exporter"
}

// signalURL is the URL of one signal under a base endpoint: over
// http/protobuf the signal's path is appended, as the specification says
// for OTEL_EXPORTER_OTLP_ENDPOINT; over grpc the base is the URL.
func signalURL(base, protocol, path string) string {
	if protocol == GRPC {
		return base
	}
	return strings.TrimSuffix(base, "/") + path
}

// parseHeaders reads the W3C baggage-like list of OTEL_EXPORTER_OTLP_HEADERS:
// key=value pairs separated by commas, values percent-encoded.
func parseHeaders(raw string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The entry is not quoted: it may be a token.
			return out, errors.New("an entry is not of the form key=value")
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return out, fmt.Errorf("the value of %q is not percent-encoded", k)
		}
		out[k] = dv
	}
	return out, nil
}
