// Package journal is the durable record of a run: one JSON line per phase
// transition in <state_dir>/runs/<run-id>/journal.jsonl, the plan the run
// used beside it, and the readers that list past runs, show a timeline and
// let an interrupted run resume.
//
// A line is handed to the kernel with a single write before Append returns,
// so a process that is killed loses nothing it was told was written; fsync
// happens in the background (at most every 100 ms) or, in SyncAlways mode,
// on every entry. Registered secret values never reach the file.
//
// Every line ends with an HMAC under the state directory's key (package
// seal) chained to the line before it, so an edited, removed, added or moved
// line is found (chain.go); the process writing a run holds the run's lock
// (lock.go), so no two processes write one journal.
//
// Readers treat the file as untrusted input: a torn last line (a write cut
// short by a crash) is ignored, anything else that is malformed, or that
// does not verify, is an error naming the line, never a panic.
//
// This package must not import interp, the engine, builtins or providers'
// implementations; it knows events only as typed data, not how they arise.
package journal
