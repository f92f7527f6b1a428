// Package cassette records a run's model traffic and plays it back: the
// cassette file (JSON, keys in a fixed order, one exchange per model call),
// the recorder that writes one from a real run (`symbi run --record`), and
// the replay provider that answers from one (`symbi run --replay`, the
// cassette of a `symbi test` run). A request that does not match what was
// recorded fails with a readable diff of the two requests (MismatchError);
// in update mode that exchange is recorded again from the live model.
//
// The engine decides which models a run calls; a Session stands between
// them (engine.Options.Cassette), and every exchange it keeps has passed
// through the redactor the engine hands it, so a cassette never holds a
// secret the run knew. docs/testing.md documents the format and the
// matching rules.
//
// A cassette is data that may come from anywhere: Parse must never panic or
// hang on any input (FuzzParse checks it, with a round trip). This package
// must not import the engine, policies or tools.
package cassette
