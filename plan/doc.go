// Package plan defines the execution plan: the fully resolved, serialisable
// value that the compiler (package interp) produces from a configuration and
// the engine (package engine) runs.
//
// A plan is plain data. Every reference is replaced by its target's address
// ("model.fast"), every default is filled in, every file read is recorded with
// its sha256, and every deferred expression is kept as source text with its
// range. Its JSON form is canonical: stable key order, no timestamps, no
// absolute paths and no secrets, so two compilations of the same files are
// byte-identical on any machine.
//
// The names the engine reserves (DelegateTool, TerminateTool, RespondAction)
// are here too, since the compiler keeps them free and the engine offers them.
//
// The defaults of the language live here too (defaults.go): every value the
// compiler fills in for an attribute left out is a constant or a Default…
// function of this package, and the packages that read plans fall back to
// the same values for a plan made without the compiler instead of writing
// their own.
//
// Encode's JSON is written by code internal/jsongen generates (json_gen.go)
// and is what encoding/json would write, byte for byte: regenerate it after
// changing a type (TestJSONGenIsCurrent says when).
//
// This package must not evaluate HCL, read the environment or import any other
// symbi package but internal/jsonenc, the generated code's runtime: it is the
// contract between the compiler and everything that consumes plans. Its
// subpackage plan/eval evaluates the deferred expressions at run time.
package plan
