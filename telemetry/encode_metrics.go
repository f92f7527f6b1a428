package telemetry

import (
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/encoding/protowire"
)

// The metric exporter writes the collector's Export request field by
// field, as the span exporter does (encode.go): the bytes proto.Marshal
// gives for the OTLP message types built from the same data, which
// TestEncodeMetricsMatchesProto and FuzzEncodeMetrics hold it to. Metrics
// are exported once a minute, so this is not for speed: the OTLP message
// types and the protobuf runtime they need are then linked into no
// command, and their package init (0.2-0.3 ms, every process) is gone
// (docs/benchmarks.md).

// Field numbers of opentelemetry/proto/metrics/v1 (the request's,
// resource's and scope's are encode.go's).
const (
	fieldRequestResourceMetrics = 1 // ExportMetricsServiceRequest.resource_metrics

	fieldResourceMetricsResource = 1
	fieldResourceMetricsScope    = 2
	fieldResourceMetricsSchema   = 3

	fieldScopeMetricsScope   = 1
	fieldScopeMetricsMetrics = 2
	fieldScopeMetricsSchema  = 3

	fieldMetricName        = 1
	fieldMetricDescription = 2
	fieldMetricUnit        = 3
	fieldMetricGauge       = 5
	fieldMetricSum         = 7
	fieldMetricHistogram   = 9

	fieldDataPoints     = 1 // Gauge, Sum, Histogram
	fieldTemporality    = 2 // Sum, Histogram
	fieldSumIsMonotonic = 3

	fieldPointStart      = 2 // NumberDataPoint, HistogramDataPoint
	fieldPointTime       = 3
	fieldNumberAsDouble  = 4
	fieldNumberAsInt     = 6
	fieldNumberAttrs     = 7
	fieldHistogramCount  = 4
	fieldHistogramSum    = 5
	fieldHistogramCounts = 6
	fieldHistogramBounds = 7
	fieldHistogramAttrs  = 9
	fieldHistogramMin    = 11
	fieldHistogramMax    = 12

	temporalityDelta      = 1 // AggregationTemporality
	temporalityCumulative = 2
)

// appendExportMetrics appends the Export request of rm. The aggregations
// symbi's instruments make (sums, gauges, histograms) are encoded; another
// is an error naming it, and nothing is sent, as a string that is not
// UTF-8 is (a collector would refuse the whole request).
func appendExportMetrics(b []byte, rm *metricdata.ResourceMetrics) ([]byte, error) {
	var errs []error
	e := &encoder{b: b}
	rs := e.begin(fieldRequestResourceMetrics)
	e.resource(fieldResourceMetricsResource, rm.Resource)
	for _, sm := range rm.ScopeMetrics {
		ss := e.begin(fieldResourceMetricsScope)
		e.scope(fieldScopeMetricsScope, sm.Scope)
		for _, m := range sm.Metrics {
			mark := len(e.b)
			pm := e.begin(fieldScopeMetricsMetrics)
			e.string(fieldMetricName, m.Name)
			e.string(fieldMetricDescription, m.Description)
			e.string(fieldMetricUnit, m.Unit)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				sumOf(e, d.DataPoints, d.Temporality, d.IsMonotonic)
			case metricdata.Sum[float64]:
				sumOf(e, d.DataPoints, d.Temporality, d.IsMonotonic)
			case metricdata.Gauge[int64]:
				gaugeOf(e, d.DataPoints)
			case metricdata.Gauge[float64]:
				gaugeOf(e, d.DataPoints)
			case metricdata.Histogram[int64]:
				histogramOf(e, d.DataPoints, d.Temporality)
			case metricdata.Histogram[float64]:
				histogramOf(e, d.DataPoints, d.Temporality)
			default:
				errs = append(errs, fmt.Errorf("metric %s: aggregation %T is not exported", m.Name, m.Data))
				e.b = e.b[:mark]
				continue
			}
			e.end(pm)
		}
		e.string(fieldScopeMetricsSchema, sm.Scope.SchemaURL)
		e.end(ss)
	}
	if rm.Resource != nil {
		e.string(fieldResourceMetricsSchema, rm.Resource.SchemaURL())
	}
	e.end(rs)
	if e.invalid {
		errs = append(errs, errors.New("a metric's string field contains invalid UTF-8"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e.b, nil
}

func temporalityOf(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.DeltaTemporality:
		return temporalityDelta
	case metricdata.CumulativeTemporality:
		return temporalityCumulative
	}
	return 0
}

func sumOf[N int64 | float64](e *encoder, dps []metricdata.DataPoint[N], t metricdata.Temporality, monotonic bool) {
	m := e.begin(fieldMetricSum)
	numberPointsOf(e, dps)
	e.varint(fieldTemporality, temporalityOf(t))
	if monotonic {
		e.varint(fieldSumIsMonotonic, 1)
	}
	e.end(m)
}

func gaugeOf[N int64 | float64](e *encoder, dps []metricdata.DataPoint[N]) {
	m := e.begin(fieldMetricGauge)
	numberPointsOf(e, dps)
	e.end(m)
}

// numberPointsOf appends NumberDataPoints. Their value is a oneof:
// written even when zero, and after the other fields, as proto.Marshal
// writes oneofs (last, to keep the wire output of the older Go
// implementation).
func numberPointsOf[N int64 | float64](e *encoder, dps []metricdata.DataPoint[N]) {
	for _, dp := range dps {
		p := e.begin(fieldDataPoints)
		e.fixed64(fieldPointStart, uint64(dp.StartTime.UnixNano()))
		e.fixed64(fieldPointTime, uint64(dp.Time.UnixNano()))
		e.keyValues(fieldNumberAttrs, dp.Attributes.ToSlice())
		switch v := any(dp.Value).(type) {
		case float64:
			e.b = protowire.AppendTag(e.b, fieldNumberAsDouble, protowire.Fixed64Type)
			e.b = protowire.AppendFixed64(e.b, math.Float64bits(v))
		case int64:
			e.b = protowire.AppendTag(e.b, fieldNumberAsInt, protowire.Fixed64Type)
			e.b = protowire.AppendFixed64(e.b, uint64(v))
		}
		e.end(p)
	}
}

func histogramOf[N int64 | float64](e *encoder, dps []metricdata.HistogramDataPoint[N], t metricdata.Temporality) {
	m := e.begin(fieldMetricHistogram)
	for _, dp := range dps {
		p := e.begin(fieldDataPoints)
		e.fixed64(fieldPointStart, uint64(dp.StartTime.UnixNano()))
		e.fixed64(fieldPointTime, uint64(dp.Time.UnixNano()))
		e.fixed64(fieldHistogramCount, dp.Count)
		e.double(fieldHistogramSum, float64(dp.Sum)) // optional: always set
		if len(dp.BucketCounts) > 0 {
			e.b = protowire.AppendTag(e.b, fieldHistogramCounts, protowire.BytesType)
			e.b = protowire.AppendVarint(e.b, uint64(8*len(dp.BucketCounts)))
			for _, c := range dp.BucketCounts {
				e.b = protowire.AppendFixed64(e.b, c)
			}
		}
		if len(dp.Bounds) > 0 {
			e.b = protowire.AppendTag(e.b, fieldHistogramBounds, protowire.BytesType)
			e.b = protowire.AppendVarint(e.b, uint64(8*len(dp.Bounds)))
			for _, x := range dp.Bounds {
				e.b = protowire.AppendFixed64(e.b, math.Float64bits(x))
			}
		}
		e.keyValues(fieldHistogramAttrs, dp.Attributes.ToSlice())
		if v, ok := dp.Min.Value(); ok {
			e.double(fieldHistogramMin, float64(v))
		}
		if v, ok := dp.Max.Value(); ok {
			e.double(fieldHistogramMax, float64(v))
		}
		e.end(p)
	}
	e.varint(fieldTemporality, temporalityOf(t))
	e.end(m)
}

// double appends a double field with presence: written even when zero.
func (e *encoder) double(num protowire.Number, v float64) {
	e.b = protowire.AppendTag(e.b, num, protowire.Fixed64Type)
	e.b = protowire.AppendFixed64(e.b, math.Float64bits(v))
}
