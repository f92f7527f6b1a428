package telemetry

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The OTLP messages built from the SDK's data, as the exporters built them
// before they encoded the same bytes by hand (encode.go,
// encode_metrics.go): the tests hold the hand-written encodings to
// proto.Marshal of these.

func resourceOf(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: keyValues(r.Attributes())}
}

func scopeOf(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: keyValues(s.Attributes.ToSlice())}
}

func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		var vs []*commonpb.AnyValue
		for _, b := range v.AsBoolSlice() {
			vs = append(vs, anyValue(attribute.BoolValue(b)))
		}
		return array(vs)
	case attribute.INT64SLICE:
		var vs []*commonpb.AnyValue
		for _, i := range v.AsInt64Slice() {
			vs = append(vs, anyValue(attribute.Int64Value(i)))
		}
		return array(vs)
	case attribute.FLOAT64SLICE:
		var vs []*commonpb.AnyValue
		for _, f := range v.AsFloat64Slice() {
			vs = append(vs, anyValue(attribute.Float64Value(f)))
		}
		return array(vs)
	case attribute.STRINGSLICE:
		var vs []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			vs = append(vs, anyValue(attribute.StringValue(s)))
		}
		return array(vs)
	case attribute.SLICE:
		var vs []*commonpb.AnyValue
		for _, e := range v.AsSlice() {
			vs = append(vs, anyValue(e))
		}
		return array(vs)
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: keyValues(v.AsMap())}}}
	}
	return &commonpb.AnyValue{}
}

func array(vs []*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

// resourceMetrics is rm in OTLP's form. The aggregations symbi's
// instruments make (sums, gauges, histograms) are encoded; any other is an
// error naming it, and the rest is sent.
func resourceMetrics(rm *metricdata.ResourceMetrics) (*metricspb.ResourceMetrics, error) {
	out := &metricspb.ResourceMetrics{Resource: resourceOf(rm.Resource)}
	if rm.Resource != nil {
		out.SchemaUrl = rm.Resource.SchemaURL()
	}
	var errs []error
	for _, sm := range rm.ScopeMetrics {
		ps := &metricspb.ScopeMetrics{Scope: scopeOf(sm.Scope), SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			pm := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				pm.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numberPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
			case metricdata.Sum[float64]:
				pm.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numberPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}}
			case metricdata.Gauge[int64]:
				pm.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
			case metricdata.Gauge[float64]:
				pm.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
			case metricdata.Histogram[int64]:
				pm.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: histogramPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
			case metricdata.Histogram[float64]:
				pm.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: histogramPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality)}}
			default:
				errs = append(errs, fmt.Errorf("metric %s: aggregation %T is not exported", m.Name, m.Data))
				continue
			}
			ps.Metrics = append(ps.Metrics, pm)
		}
		out.ScopeMetrics = append(out.ScopeMetrics, ps)
	}
	return out, errors.Join(errs...)
}

func temporality(t metricdata.Temporality) metricspb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func numberPoints[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricspb.NumberDataPoint {
	out := make([]*metricspb.NumberDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricspb.NumberDataPoint{
			Attributes:        keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: uint64(dp.StartTime.UnixNano()),
			TimeUnixNano:      uint64(dp.Time.UnixNano()),
		}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricspb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func histogramPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricspb.HistogramDataPoint {
	out := make([]*metricspb.HistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		p := &metricspb.HistogramDataPoint{
			Attributes:        keyValues(dp.Attributes.ToSlice()),
			StartTimeUnixNano: uint64(dp.StartTime.UnixNano()),
			TimeUnixNano:      uint64(dp.Time.UnixNano()),
			Count:             dp.Count,
			Sum:               &sum,
			BucketCounts:      dp.BucketCounts,
			ExplicitBounds:    dp.Bounds,
		}
		if v, ok := dp.Min.Value(); ok {
			f := float64(v)
			p.Min = &f
		}
		if v, ok := dp.Max.Value(); ok {
			f := float64(v)
			p.Max = &f
		}
		out = append(out, p)
	}
	return out
}

// exportRequest encodes the collector's Export request: each message as
// its field 1 (resource_spans, resource_metrics).
func exportRequest[M proto.Message](items []M) ([]byte, error) {
	var out []byte
	for _, it := range items {
		b, err := proto.Marshal(it)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// decodeMetrics is a metrics Export request as text, for a failure's
// message.
func decodeMetrics(b []byte) string {
	var req colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return fmt.Sprintf("%x (%v)", b, err)
	}
	return prototext.Format(&req)
}
