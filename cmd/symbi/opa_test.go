package main

// The scripts run symbi in-process (run, through testscript), with OPA
// linked into this test binary; the real binaries, symbi starting
// symbi-opa, are e2e's.
import _ "github.com/symbi-dev/symbi/policy/opa"
