package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanExporter is an OTLP span exporter over otlpClient.
type spanExporter struct {
	c       *otlpClient
	stopped atomic.Bool
	maxSize atomic.Int64 // the largest request's size in bytes
}

func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errors.New("the OTLP span exporter is shut down")
	}
	if len(spans) == 0 {
		return nil
	}
	// A request is about as large as the largest yet: one allocation, not
	// a dozen growths. The buffer is not reused, as the transport may
	// still hold the last body when ExportSpans returns.
	req, err := appendExportSpans(make([]byte, 0, e.maxSize.Load()+4096), spans)
	if err != nil {
		return fmt.Errorf("exporting %d span(s) to %s: %w", len(spans), e.c.url, err)
	}
	if n := int64(len(req)); n > e.maxSize.Load() {
		e.maxSize.Store(n)
	}
	if err := e.c.export(ctx, req); err != nil {
		return fmt.Errorf("exporting %d span(s) to %s: %w", len(spans), e.c.url, err)
	}
	return nil
}

// exportEncoded sends an Export request of n spans that spanBatcher
// encoded as the spans ended.
func (e *spanExporter) exportEncoded(ctx context.Context, req []byte, n int) error {
	if e.stopped.Load() {
		return errors.New("the OTLP span exporter is shut down")
	}
	if err := e.c.export(ctx, req); err != nil {
		return fmt.Errorf("exporting %d span(s) to %s: %w", n, e.c.url, err)
	}
	return nil
}

func (e *spanExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.c.client.CloseIdleConnections()
	return nil
}

// scopeIdentity is a scope without its attribute set, which is not
// comparable; scopes are told apart by name, version and schema.
func scopeIdentity(s instrumentation.Scope) instrumentation.Scope {
	return instrumentation.Scope{Name: s.Name, Version: s.Version, SchemaURL: s.SchemaURL}
}

// metricExporter is an OTLP metric exporter over otlpClient, with the SDK's
// default temporality (cumulative) and aggregations.
type metricExporter struct {
	c       *otlpClient
	stopped atomic.Bool
}

func (e *metricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *metricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if e.stopped.Load() {
		return errors.New("the OTLP metric exporter is shut down")
	}
	req, err := appendExportMetrics(nil, rm)
	if err != nil {
		return err
	}
	if err := e.c.export(ctx, req); err != nil {
		return fmt.Errorf("exporting metrics to %s: %w", e.c.url, err)
	}
	return nil
}

func (e *metricExporter) ForceFlush(context.Context) error { return nil }

func (e *metricExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.c.client.CloseIdleConnections()
	return nil
}
