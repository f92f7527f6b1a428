// Package routing picks the model a `router` block sends the next call to:
// it drops the models that cannot serve the request (a missing capability, a
// context window too small, a cost over the remaining budget, quality below
// the minimum), scores the rest by the router's strategy, and reports every
// rejection with its reason so the journal can show why.
//
// Select is a pure function of its arguments: no clock, no randomness, no IO,
// so the same request always routes the same way. See docs/routing.md.
//
// This package must not import interp, the engine, builtins or policy.
package routing
