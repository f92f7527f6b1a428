// Package stdlib is symbi's one function registry: the go-cty standard
// library under Terraform's names, try/can, and symbi's own functions (env,
// file, templatefile, glob_match, tokens, cost, sha256, duration). Every
// function has a description and a test; a meta-test fails when one lacks
// either, and docs/functions.md is generated from the registry.
//
// It also holds what the rest of symbi must share with those functions so
// that a configuration and the engine agree: the token estimator
// (EstimateTokens), the duration parser (ParseDuration) and the glob matcher
// of tool profiles (MatchGlob).
//
// Impure functions reach the outside world only through Options (the base
// directory, the environment, the read hook), so the compiler can record
// every file read and tests can run without touching the process.
//
// This package must not import interp, the engine, builtins, policy or any
// provider.
package stdlib
