// Package provider defines how the engine talks to a model: one streaming
// call per turn, with normalised events and typed errors. Implementations
// live in subpackages: openai (any OpenAI-compatible Chat Completions
// endpoint, through go-openai), anthropic (Anthropic's Messages API, through
// a client of symbi's own) and scripted (deterministic offline turns). fakeserver
// is a local HTTP server that speaks both wire formats, for tests and
// benchmarks.
//
// This package must not import the engine, policies or tools.
package provider
