package main

import (
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/policy/opaproc"
)

// OPA policies are decided in symbi-opa, a binary of its own that the first
// opa policy a command prepares starts (policy/opaproc): OPA's package init
// and pages would cost every symbi invocation its start-up time and memory,
// a plan with no opa policy included (docs/benchmarks.md). The helper is
// found beside symbi, then on PATH, as symbi-temporal is.

// useOPAHelper makes the helper's client the process's OPA engine. main
// calls it, not run: tests call run with policy/opa linked in-process.
func useOPAHelper() *opaproc.Client {
	c := opaproc.NewClient(opaproc.Find)
	policy.RegisterOPA(c)
	return c
}
