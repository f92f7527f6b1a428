// Package backoff computes the wait before a retry, for a model's transport
// retries (provider/openai) and a tool's retry recovery (builtins), so the
// two follow one rule: the wait before retry n is
//
//	min(max, initial × multiplier^(n-1) × (1 + jitter × u)),  u uniform in [-1, 1)
//
// The jitter spreads the wait and the cap comes last, so no wait exceeds
// max. What a server's Retry-After does is the caller's to decide.
//
// This package must not import any other symbi package: it is a leaf that
// both the providers and the tools may import.
package backoff
