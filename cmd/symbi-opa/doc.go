// Command symbi-opa decides symbi's OPA policies in a process of its own.
//
// symbi starts it, with the first opa policy a command prepares, and talks
// to it over its stdin and stdout (package policy/opaproc); it is not meant
// to be run by hand. Named after what it runs, beside symbi-temporal: symbi
// finds both beside its own executable, then on PATH, and
// `go build -o bin/ ./cmd/...` builds the three.
//
// OPA lives here, not in symbi, because Go runs every linked package's init
// in every process: OPA's (with protobuf, jwx, yaml and its wasm compiler)
// cost each symbi command its start-up time and memory even when its plan
// has no opa policy (docs/benchmarks.md, phase 4). A separate process next
// to what it guards is also how OPA itself is usually deployed.
//
// It exits when its stdin closes, so it never outlives symbi.
package main
