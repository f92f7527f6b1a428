// Package planexec is the pure part of plan_execute: reading the plan a
// model wrote (Parse), checking it before anything runs (Validate: ids,
// dependencies, cycles, the step limit), the planning prompt, and the
// Scheduler that runs a validated plan's steps as their dependencies
// finish, at most Parallel at a time, each under its own timeout.
//
// What a step does, and what happens around it (the budget, the journal,
// replanning, the synthesis), the engine decides through the Scheduler's
// functions (engine/planexec.go). This package must not import the engine,
// the journal, policy or budget.
package planexec
