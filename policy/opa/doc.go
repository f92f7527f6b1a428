// Package opa is symbi's OPA engine: Rego v1 policies loaded, compiled and
// prepared once (NewOPA), decided per action (Decide), explained with a
// trace, their test_ rules run as `opa test` runs them, and the built-ins
// whose result may change between two evaluations named (Impure).
//
// Importing it registers Engine with package policy (policy.RegisterOPA),
// as a database/sql driver registers itself: a process that imports it
// decides opa policies in-process. The symbi command does not: OPA's
// packages cost every process that links them their init and the pages
// they map, so symbi starts the symbi-opa helper, which imports this
// package, only for a plan with an opa policy (policy/opaproc,
// docs/policy.md). symbi-temporal and the tests that need Rego import it.
//
// It may import plan and policy, and OPA; nothing of symbi imports it but
// the binaries and tests that decide Rego in their own process.
package opa
