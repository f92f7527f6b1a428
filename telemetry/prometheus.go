package telemetry

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The Prometheus endpoint (--metrics-addr) serves the meter's metrics in
// Prometheus's text exposition format (version 0.0.4), translated as
// OpenTelemetry's Prometheus compatibility specification says: names with
// every character Prometheus does not allow made "_", the unit as a
// suffix (s: _seconds; an annotation such as {token}: none), _total on
// counters, histograms as _bucket, _sum and _count. It is written here,
// from a manual reader, rather than with the Prometheus client library,
// whose package init (its default registry and collectors) every symbi
// command would pay for (docs/benchmarks.md); the tests parse what it
// writes with Prometheus's own text parser.

// serveMetrics listens on addr and serves the metrics at /metrics.
func (t *Telemetry) serveMetrics(addr string) (sdkmetric.Reader, error) {
	reader := sdkmetric.NewManualReader()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(r.Context(), &rm); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		writePrometheus(w, &rm)
	})
	t.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	t.MetricsURL = "http://" + ln.Addr().String() + "/metrics"
	go t.server.Serve(ln)
	return reader, nil
}

// writePrometheus writes rm in the text exposition format.
func writePrometheus(w io.Writer, rm *metricdata.ResourceMetrics) {
	var b strings.Builder
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			name := promName(m.Name, m.Unit)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				writeSum(&b, name, m.Description, d.IsMonotonic, d.DataPoints)
			case metricdata.Sum[float64]:
				writeSum(&b, name, m.Description, d.IsMonotonic, d.DataPoints)
			case metricdata.Gauge[int64]:
				writeSum(&b, name, m.Description, false, d.DataPoints)
			case metricdata.Gauge[float64]:
				writeSum(&b, name, m.Description, false, d.DataPoints)
			case metricdata.Histogram[int64]:
				writeHistogram(&b, name, m.Description, d.DataPoints)
			case metricdata.Histogram[float64]:
				writeHistogram(&b, name, m.Description, d.DataPoints)
			}
		}
	}
	io.WriteString(w, b.String())
}

func writeSum[N int64 | float64](b *strings.Builder, name, help string, counter bool, dps []metricdata.DataPoint[N]) {
	typ := "gauge"
	if counter {
		typ = "counter"
		name += "_total"
	}
	header(b, name, help, typ)
	for _, dp := range dps {
		fmt.Fprintf(b, "%s%s %s\n", name, labels(dp.Attributes, ""), promValue(float64(dp.Value)))
	}
}

func writeHistogram[N int64 | float64](b *strings.Builder, name, help string, dps []metricdata.HistogramDataPoint[N]) {
	header(b, name, help, "histogram")
	for _, dp := range dps {
		var cum uint64
		for i, bound := range dp.Bounds {
			cum += dp.BucketCounts[i]
			fmt.Fprintf(b, "%s_bucket%s %d\n", name, labels(dp.Attributes, promValue(bound)), cum)
		}
		fmt.Fprintf(b, "%s_bucket%s %d\n", name, labels(dp.Attributes, "+Inf"), dp.Count)
		fmt.Fprintf(b, "%s_sum%s %s\n", name, labels(dp.Attributes, ""), promValue(float64(dp.Sum)))
		fmt.Fprintf(b, "%s_count%s %d\n", name, labels(dp.Attributes, ""), dp.Count)
	}
}

func header(b *strings.Builder, name, help, typ string) {
	if help != "" {
		fmt.Fprintf(b, "# HELP %s %s\n", name, strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help))
	}
	fmt.Fprintf(b, "# TYPE %s %s\n", name, typ)
}

// labels is a data point's label set, its keys sorted, with le when given.
func labels(set attribute.Set, le string) string {
	kvs := set.ToSlice()
	if len(kvs) == 0 && le == "" {
		return ""
	}
	pairs := make([]string, 0, len(kvs)+1)
	for _, kv := range kvs {
		pairs = append(pairs, promLabel(string(kv.Key))+`="`+escapeLabel(kv.Value.Emit())+`"`)
	}
	sort.Strings(pairs)
	if le != "" {
		pairs = append(pairs, `le="`+le+`"`)
	}
	return "{" + strings.Join(pairs, ",") + "}"
}

func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

// promName is an OpenTelemetry metric name as Prometheus spells it, with
// its unit.
func promName(name, unit string) string {
	n := sanitize(name, true)
	switch {
	case unit == "" || strings.HasPrefix(unit, "{"):
	case unit == "s":
		n += "_seconds"
	case unit == "ms":
		n += "_milliseconds"
	case unit == "By":
		n += "_bytes"
	case unit == "1":
		n += "_ratio"
	default:
		n += "_" + sanitize(unit, false)
	}
	return n
}

func promLabel(key string) string { return sanitize(key, false) }

// sanitize replaces what a Prometheus name may not hold ([a-zA-Z_:] first,
// [a-zA-Z0-9_:] after; no colons in label names) with "_".
func sanitize(s string, colons bool) string {
	var b strings.Builder
	for i, r := range s {
		ok := r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || (colons && r == ':') || (i > 0 && '0' <= r && r <= '9')
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func promValue(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
