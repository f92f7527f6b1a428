// Package temporal runs symbi's plans as durable Temporal workflows: one
// workflow per run, whose code is the engine's own ORGA loop (package
// engine, given a Runtime), with model calls and tool calls as activities,
// approvals as Updates bound to run, request and arguments digest, budgets
// and breakers as workflow state, best-of-N candidates and delegations as
// child workflows under what the run reserved for them, and the run's events served by a query
// for `symbi runs show` and the live output. docs/temporal.md has the
// diagram and the mapping.
//
// # API
//
//	NewWorker(c client.Client, opts WorkerOptions) (worker.Worker, error)
//	Register(r worker.Registry, opts WorkerOptions)   // workflow and activities, for tests and replay
//	(*Client).Start / Follow / Cancel / List / Events / Pending / Decide
//
// What the workflow code may and may not do: it never reads a clock, a
// random source, a file or the environment except through the workflow
// (workflow.Now, a seeded stream, the files' digests checked before
// anything runs), never starts a goroutine (engine.Runtime.Go runs
// coroutines) and never runs a tool or a model in place (activities do,
// on a worker whose engine was built from the same plan). Changes to the
// order of its commands are guarded with workflow.GetVersion, and
// testdata/histories holds a recorded history of every mode that
// TestReplay replays.
//
// Only cmd/symbi-temporal imports this package: the Temporal SDK and grpc
// must not reach the symbi binary (deps_test.go). temporal/contract is the
// part symbi shares.
package temporal
