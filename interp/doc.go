// Package interp is the compiler of the symbi language: it evaluates the
// blocks that package lang decoded, resolves references between them, fills
// every default, runs every compile-time check, and builds the execution plan
// (package plan). It also evaluates the deferred expressions that the plan
// keeps as source text (EvalDeferred, EvalString) for the engine, and offers
// the configuration's scope (Config.Scope) to the REPL.
//
// This package must not run agents, call models or tools, or read the
// environment for anything but variables (SYMBI_VAR_*): an expression that
// calls env() is kept as source and evaluated only at run time. Its engine
// lives in interp/engine, which this package does not import.
package interp
