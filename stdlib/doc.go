// Package stdlib is symbi's one function registry: the go-cty standard
// library, try/can, and symbi's own functions (env, file, templatefile,
// glob_match, tokens, cost, sha256, duration). Every function has a
// description and a test.
//
// It also holds the token estimator that the engine uses, so tokens() in a
// configuration and the engine's preflight agree.
//
// This package must not import interp, the engine or any provider.
package stdlib
