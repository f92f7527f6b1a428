// Package render shows journal events to people. It is the one place that
// turns an event's typed data (journal.StartedData, …, journal.TerminatedData)
// into words, in two forms:
//
//   - Live: the compact lines `symbi run` and `symbi resume` write to
//     standard error as a run goes (→ a tool call, ✓ a decision, ← a result);
//   - Timeline and Describe: every event with its data decoded, as
//     `symbi runs show` and the REPL's :journal print a journal, and as the
//     REPL's :step shows a phase.
//
// Much of an event is text from the model, a tool or a file: every line it
// returns has its control and invisible characters escaped
// (policy.EscapeLine), so nothing in a journal can move the cursor or
// forge a line on the terminal.
//
// This package must not import the engine, interp, builtins, providers'
// implementations or anything that touches the terminal: it reads events
// as the journal records them (the engine's live events have the same
// shape), and returns strings for its callers (cmd/symbi, repl) to print.
package render
