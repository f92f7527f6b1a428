// Package telemetry sets up OpenTelemetry for a symbi process: the tracer
// and meter providers the engine emits through, their exporters (OTLP over
// grpc or http/protobuf, the console, a Prometheus endpoint), the sampler
// and the resource, from the plan's telemetry block with the standard
// OTEL_* environment variables over it (the environment wins, as the
// OpenTelemetry specification says). Nothing is set up unless configured.
//
// It keeps the collector off the run's path: spans and metrics are batched
// and exported in the background, the batch queue is bounded (it drops,
// never blocks), and at the end of the process the last export waits only
// for a collector that has answered (see Telemetry.Shutdown). With OTLP
// the only trace exporter, spans are symbi's own implementation of the
// API (tracer.go), exporting what the SDK's would.
//
// The engine emits through the OpenTelemetry API (go.opentelemetry.io/otel/trace
// and metric), never through the SDK or an exporter: this package is the
// only one that links them, and cmd/symbi the only one that calls it. It
// must not import engine, interp or lang.
package telemetry
