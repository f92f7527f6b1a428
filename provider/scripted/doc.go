// Package scripted is a provider.Model that plays back turns from a JSON
// script instead of calling a model: deterministic, offline, and fast, for
// examples, tests and benchmarks. The format is documented in
// docs/providers.md; Parse reports a mistake with its position in the script
// ("turns[3].tool_calls[0]: name is required").
//
// A script is data: Parse must never panic or hang on any input (FuzzParse
// checks it). This package must not import the engine, policies or tools.
package scripted
