package telemetry

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// protoMetrics is the Export request proto.Marshal gives for rm, or its
// error.
func protoMetrics(rm *metricdata.ResourceMetrics) ([]byte, error) {
	m, err := resourceMetrics(rm)
	if err != nil {
		return nil, err
	}
	return exportRequest([]*metricspb.ResourceMetrics{m})
}

// sampleMetrics is every aggregation symbi's instruments make, with
// attributes of every kind, zero values (which a oneof or an optional
// field still writes), two scopes, and a value long enough for two-byte
// lengths.
func sampleMetrics(name string, n int64, f float64) *metricdata.ResourceMetrics {
	t0, t1 := time.Unix(1764768000, 5), time.Unix(1764768060, 7)
	attrs := attribute.NewSet(attribute.String("gen_ai.operation.name", name), attribute.Int64("n", n), attribute.Float64("f", f),
		attribute.Bool("ok", n%2 == 0), attribute.StringSlice("ss", []string{"a", name}), attribute.Int64Slice("is", []int64{n, -n}))
	long := attribute.NewSet(attribute.String("long", strings.Repeat("x", 300)))
	return &metricdata.ResourceMetrics{
		Resource: resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "symbi")),
		ScopeMetrics: []metricdata.ScopeMetrics{
			{
				Scope: instrumentation.Scope{Name: "github.com/symbi-dev/symbi/engine", Version: "v1", SchemaURL: "https://opentelemetry.io/schemas/1.26.0",
					Attributes: attribute.NewSet(attribute.String("k", "v"))},
				Metrics: []metricdata.Metrics{
					{Name: "gen_ai.client.token.usage", Description: "tokens", Unit: "{token}", Data: metricdata.Histogram[int64]{
						Temporality: metricdata.CumulativeTemporality,
						DataPoints: []metricdata.HistogramDataPoint[int64]{
							{Attributes: attrs, StartTime: t0, Time: t1, Count: 3, Sum: n, Bounds: []float64{1, 4, 16}, BucketCounts: []uint64{0, 1, 2, 0},
								Min: metricdata.NewExtrema(int64(1)), Max: metricdata.NewExtrema(n)},
							{Attributes: long, StartTime: t0, Time: t1},
						},
					}},
					{Name: "gen_ai.client.operation.duration", Unit: "s", Data: metricdata.Histogram[float64]{
						Temporality: metricdata.DeltaTemporality,
						DataPoints:  []metricdata.HistogramDataPoint[float64]{{Attributes: attrs, StartTime: t0, Time: t1, Count: 1, Sum: f, Bounds: []float64{0.5}, BucketCounts: []uint64{1, 0}, Min: metricdata.NewExtrema(f)}},
					}},
					{Name: "symbi.gate.decisions", Data: metricdata.Sum[int64]{
						Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
						DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, StartTime: t0, Time: t1, Value: n}, {StartTime: t0, Time: t1, Value: 0}},
					}},
					{Name: "symbi.float.sum", Data: metricdata.Sum[float64]{
						Temporality: metricdata.DeltaTemporality,
						DataPoints:  []metricdata.DataPoint[float64]{{Attributes: attrs, Time: t1, Value: 0}, {Time: t1, Value: f}},
					}},
				},
			},
			{
				Scope: instrumentation.Scope{Name: "other"},
				Metrics: []metricdata.Metrics{
					{Name: "gauge.int", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, Time: t1, Value: -n}}}},
					{Name: "gauge.float", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: t1, Value: f}}}},
					{Name: "", Data: metricdata.Gauge[int64]{}},
				},
			},
			{Scope: instrumentation.Scope{Name: "empty"}},
		},
	}
}

// TestEncodeMetricsMatchesProto: the metric exporter's hand-written
// encoding is, byte for byte, proto.Marshal of the OTLP messages built
// from the same data; an aggregation it does not know, or a string that
// is not UTF-8, is an error for both.
func TestEncodeMetricsMatchesProto(t *testing.T) {
	for _, rm := range []*metricdata.ResourceMetrics{
		sampleMetrics("chat", 42, 0.25),
		sampleMetrics("", 0, 0),
		sampleMetrics("execute_tool", -7, math.Inf(1)),
		{}, // no resource, no scope
	} {
		want, err := protoMetrics(rm)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendExportMetrics(nil, rm)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the encoding differs from proto.Marshal's:\n got %s\nwant %s", decodeMetrics(got), decodeMetrics(want))
		}
	}
	bad := sampleMetrics("bad \xff", 1, 1)
	if _, err := protoMetrics(bad); err == nil {
		t.Fatal("proto.Marshal took a string that is not UTF-8")
	}
	if _, err := appendExportMetrics(nil, bad); err == nil {
		t.Error("a string that is not UTF-8 was encoded")
	}
	odd := sampleMetrics("chat", 1, 1)
	odd.ScopeMetrics[1].Metrics = append(odd.ScopeMetrics[1].Metrics, metricdata.Metrics{Name: "summary", Data: metricdata.Summary{}})
	if _, err := appendExportMetrics(nil, odd); err == nil || !strings.Contains(err.Error(), "metric summary: aggregation metricdata.Summary is not exported") {
		t.Errorf("an unknown aggregation: %v", err)
	}
}

// FuzzEncodeMetrics: the same for any names and values.
func FuzzEncodeMetrics(f *testing.F) {
	f.Add("chat", int64(42), 0.25)
	f.Add("", int64(0), math.NaN())
	f.Add("bad \xff", int64(-1), -0.0)
	f.Fuzz(func(t *testing.T, name string, n int64, x float64) {
		rm := sampleMetrics(name, n, x)
		want, werr := protoMetrics(rm)
		got, gerr := appendExportMetrics(nil, rm)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("proto.Marshal: %v; the encoder: %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the encoding differs from proto.Marshal's:\n got %x\nwant %x", got, want)
		}
	})
}
