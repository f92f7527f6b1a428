// Package eval evaluates what a plan keeps for run time: the deferred
// expressions (plan.Expr) that call env() or read a best-of-N candidate, the
// strings (plan.String) built from them, and URLs, whose interpolated values
// are percent-encoded for their place. The compiler (package interp) writes
// these expressions into the plan as source text; the engine and the REPL
// read them back through this package, so running a plan never needs the
// compiler.
//
// An Evaluator parses each expression and builds the function table once;
// Deferred, String and URL are one evaluation of a fresh Evaluator.
//
// This package may import plan, stdlib (the functions), hcl and cty. It must
// not import lang, interp, the engine, or anything else the compiler or the
// engine alone needs.
package eval
