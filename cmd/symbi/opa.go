package main

// OPA policies are decided in this process.
import _ "github.com/symbi-dev/symbi/policy/opa"
