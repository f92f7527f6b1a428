// Package lang is the syntax layer of the symbi language: it parses HCL files,
// checks every block against its schema, and returns the decoded blocks with
// their attributes still as raw hcl.Expression values and their ranges.
//
// References between blocks (model.fast, tool.search) stay traversals and
// deferred expressions stay unevaluated: resolving and evaluating belong to
// package interp. Test files (*.symbitest.hcl, ParseTestFile) are decoded the
// same way; package symbitest checks and evaluates them. This package must
// not evaluate expressions, read files other than the configuration itself,
// or import any other symbi package.
package lang
