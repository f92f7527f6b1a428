// Package progress is the progress tracker of an agent's progress block: it
// tells a step that keeps failing the same way (by the similarity of its
// error texts) from one whose model changes its approach, and says what to
// do when the reattempts run out (continue, skip, abort, escalate).
//
// It decides only; the engine applies a verdict to the run (a skip note to
// the model, a StuckError, a person asked). This package must not import
// the engine, policy, the journal or a provider.
package progress
