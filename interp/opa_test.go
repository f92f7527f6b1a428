package interp

// Plans of these tests have opa policies: their binary decides Rego in its
// own process, as symbi-temporal does (symbi itself starts symbi-opa).
import _ "github.com/symbi-dev/symbi/policy/opa"
