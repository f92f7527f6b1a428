// Package budget is the accountant that enforces a plan.Budget during a run:
// every limit (iterations, model calls, tool calls and rounds, reflection
// attempts, plan steps, prompt/completion/total tokens, USD cost, timeout)
// is checked before the thing it limits happens.
//
// Model calls are reserved before they start, with an estimate of their
// tokens and cost, told what they stream as it arrives (a call that streams
// past its cap is stopped), and reconciled with what the provider reported
// after, so concurrent callers (parallel tools, plan steps sharing one
// budget) cannot together overshoot a limit: a limit is exceeded by at most
// what calls already in flight consume beyond their estimate. Best-of-N
// stages (a candidate's generation, its judging) reserve their estimate
// from one aggregate accountant the same way (ReserveStage) and run under a
// stage accountant it funds (Reservation.Stage), so every limit is shared. A
// stage that runs as part of its holder elsewhere (a delegation as a
// Temporal child workflow) runs under a share (Reservation.Share): the
// holder's limits, counted from where the holder stood. Accounting
// saturates instead of overflowing; the first budget error is sticky and is
// the one reported.
//
// Amount is the budget's unit as runs report it (results, the journal's
// usage objects, best-of-N's candidates); policies read it as run.usage through
// a type of their own, so this package and policy do not import each other.
//
// This package must not import interp, the engine, policy, builtins or any
// provider implementation; it decides nothing about what to do when a limit
// is hit.
package budget
