// Package opaproc runs OPA policies in a process of their own, the symbi-opa
// helper, and is the client symbi decides them through.
//
// OPA's packages (with protobuf, jwx, yaml and its wasm compiler) cost every
// process that links them their package init and the pages they map: about
// 5 MiB of peak memory and a fifth of the instructions of a one-round run,
// whether or not the plan has an opa policy (docs/benchmarks.md, phase 4).
// So symbi does not link them: a Client is symbi's policy.OPAEngine, and the
// first opa policy the process prepares starts the helper (found beside
// symbi's executable, then on PATH: Find), which links package policy/opa
// and serves requests over its stdin and stdout (Serve). A plan without an opa
// policy never starts it.
//
// The protocol is JSON, one message a line, each request with an id its
// answer repeats, so decisions from many goroutines are in flight at once
// (the helper answers each in a goroutine of its own). A hello first
// compares versions: a helper built from other sources is refused. Loading
// sends the plan's OPAPolicy and the base directory: the helper reads the
// files itself through plan.FileRef.Load, so their digests are checked
// there, and LoadErrors come back with file and line. An input goes with
// its numbers written as OPA reads them from Go values and its arguments as
// their bytes, so the helper builds the very input document symbi would
// have built in-process; a string that is not UTF-8, which JSON cannot
// carry, is a deny. A policy symbi no longer holds is released in the helper
// (a cleanup of its gate), so a long REPL session does not grow it. If the
// helper dies, every later decision is a deny marked as an engine error
// (fail closed), and it exits when its stdin closes, so it never outlives
// symbi.
//
// This package must not import OPA (policy/opa): cmd/symbi imports it, and
// deps_test.go keeps OPA out of symbi's binary.
package opaproc
