// Package decisionlog writes gate decisions in OPA's decision-log format:
// one JSON object per line, with the fields of OPA's own decision-log
// events (decision_id, path, input, result, timestamp, labels, metrics,
// trace_id, span_id), so that a pipeline that ingests OPA's decision logs
// (a SIEM, OPA's log consumers) takes symbi's unchanged, for rules and
// Cedar decisions as well as Rego, the engine named in labels.
//
// It only encodes and appends; the engine builds each Event and passes
// the encoded line through its secret redactor first. It imports only the
// standard library.
package decisionlog
