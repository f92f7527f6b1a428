// Package engine runs a compiled plan (never the HCL) as an
// Observe-Reason-Gate-Act loop: the model proposes actions, the agent's
// policies decide each one, approved tool calls run concurrently under their
// timeouts, circuit breakers and recovery chains, and the results become the
// observations of the next iteration. Every phase transition is appended to a
// durable journal before the next phase begins, so a killed run can resume.
//
// The phase order is enforced by types: a tool executor (builtins.Toolbox)
// accepts only a policy.Approved, and only package policy can make one, so
// nothing here can run a tool without a gate decision.
//
// # API
//
//	New(p *plan.Plan, opts Options) (*Engine, error)
//	(*Engine).Run(ctx, agent, input string, ro RunOptions) (*Result, error)
//	(*Engine).Resume(ctx, runID string) (*Result, error)
//	ResumeRun(ctx, stateDir, runID string, opts Options) (*Result, error)
//	ResumeLocked(ctx, lock *journal.RunLock, opts Options) (*Result, error)
//	(*Engine).Sync() error   // finished runs' journals on stable storage
//	(*Engine).Close() error  // Sync, then stop tools and close stores
//
// docs/engine.md describes a run phase by phase.
//
// Run returns a Result for every run that started, whatever its end; the
// error is non-nil only when the run could not start (unknown agent, a model
// or toolbox that cannot be built). Result.Termination says how it ended.
//
// # The reasoning modes
//
// run.runMode dispatches on the agent's mode: simple and react (loop.go),
// reflect_and_retry (reflect.go) and plan_execute (planexec.go);
// Engine.RunBestOfN (bestofn*.go) runs a best_of_n block. A mode
// function returns nil after setting r.answer (via r.complete), or an error
// that r.classify classifies (budget.Exceeded, context errors, *DenialError,
// *TerminatedError from the terminate tool, anything else is "error").
//
// The run primitives a mode builds on (all in run.go / act.go):
//
//	r.reason(ctx, modelCall) (provider.Response, error)    one model call: routing, context fit, budget reservation, streaming, journal
//	r.gateAction(ctx, a policy.Action) gated              schema check, policy chain, approver for asks, journal
//	r.act(ctx, []policy.Approved) []observation            dispatch under max_concurrent_tools, tool_timeout, recovery
//	r.step(ctx) (done bool, err error)                     one full react iteration over r.conv
//	r.react(ctx) error                                      the react loop over r.conv until respond / terminate
//	r.subRun(ctx, agentAddr, input string, ro RunOptions) (*Result, error)   a nested run (evaluator, judge), sharing the budget
//	r.record(eventType string, data any) error             append one journal event, after any held ones (nothing when persistence is off)
//	r.hold(eventType string, data any) error               journal an event of pure decision; written with the next record or flushJournal
//	r.flushJournal() error                                 write the held events: before any effect on the world (reason's model_call_started does it before each model call)
//
// A resume (resume.go, interrupted.go) rebuilds the conversation, charges
// the model calls that were in flight (chargeInFlight), completes the
// iteration the killed attempt was cut short in (completeCut) and settles
// each call it had dispatched without a result by its tool's on_resume
// (settleUnfinished), so a tool that writes never runs twice unasked.
//
// # Where it lives
//
// The engine is a top-level package, not a part of the compiler: it reads
// plans, never configurations. What a plan keeps for run time (expressions
// that call env(), a best-of-N candidate's vary, scorer and key) it
// evaluates through plan/eval, and the names it reserves are plan's. So it
// imports neither interp nor lang, and a resume (ResumeRun) runs the plan.json
// saved beside the journal without compiling anything again, as Terraform's
// apply reads internal/plans without decoding internal/configs. Under
// interp/ its folder said the opposite of what its imports do.
//
// The pure parts of the modes and of the loop are small packages under
// engine/internal/, each with its own tests: reflection (score parsing,
// verdicts, prompts), planexec (plan parsing, validation, the scheduler),
// bestofn (the runner, the selectors), progress (the tracker),
// prehydrate (references and resolver arguments), redact (the redactor),
// estimate (token estimates) and, shared by those, answer and msgkey. The
// drivers that need the run stay here; the names the engine exported
// before (PlanError, Candidate, ProgressTracker, ...) are aliases of
// theirs.
//
// # Telemetry
//
// The engine emits its spans and metrics through OpenTelemetry's API
// (Options.Tracer, Options.Meter; telemetry.go): invoke_agent for a run,
// chat per model call, execute_tool per tool call (through the toolbox's
// Observe), gate per decision, and spans of its own for reflection
// attempts, plan steps, best-of-N candidates and recoveries. It never sets
// up an exporter: package telemetry does, for cmd/symbi. Every gate
// decision also goes to Options.DecisionLog, redacted.
//
// This package must not import interp or lang, and must not be imported by
// anything but repl, symbitest, cmd/symbi, temporal, temporal/contract and
// cmd/symbi-temporal (deps_test.go, at the module's root, fails on either).
// A durable runtime drives it through Runtime (runtime.go): the engine
// imports none.
package engine
