// Package interp is the compiler of the symbi language: it evaluates the
// blocks that package lang decoded, resolves references between them, fills
// every default, runs every compile-time check, and builds the execution plan
// (package plan). Expressions that must wait for run time (env(), a best-of-N
// candidate) it checks and keeps in the plan as source text; package
// plan/eval evaluates them, so the engine never needs the compiler. It also
// offers the configuration's scope (Config.Scope) to the REPL.
//
// This package must not run agents, call models or tools, or read the
// environment for anything but variables (SYMBI_VAR_*): an expression that
// calls env() is kept as source and evaluated only at run time. It must not
// import the engine: package engine runs the plans this package builds, and
// does not import it either.
package interp
