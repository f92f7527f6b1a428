// Package repl is the core of `symbi repl`: a Session that takes one line of
// input at a time (an HCL expression evaluated in the configuration's scope,
// or a command such as :plan, :tools, :gate, :call, :run, :step, :journal)
// and returns what to print, whether to exit, and diagnostics.
//
// Session.Handle is pure with respect to the terminal: it reads no input and
// writes no output. Line editing, history, the prompt, colours and the
// choice between an interactive terminal and a script on standard input
// live in cmd/symbi, which drives a Session through Handle, NeedsMore (is
// the input so far incomplete: brackets or a heredoc still open?), Complete
// (tab completion) and Prompt. Diagnostics refer to the configuration's
// files and to the pseudo-file InputName, the line being handled; Files
// returns both, for hcl.NewDiagnosticTextWriter to print snippets with a
// caret.
//
// The model is Terraform's internal/repl (session.go, continuation.go) and
// internal/command/console*.go.
//
// This package must not touch the terminal, read the process environment
// (the caller passes LookupEnv), or keep package-level mutable state.
package repl
