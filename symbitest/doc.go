// Package symbitest is `symbi test`: regression tests for agents, written
// as *.symbitest.hcl files of run blocks beside the configuration they test,
// as Terraform's `terraform test` runs *.tftest.hcl files (its
// internal/moduletest gave the shape: a suite of files of runs, each with a
// status that merges upwards, and failed assertions as diagnostics that
// carry their expression's values).
//
// A run block names an agent, an input, variables, where the model's
// answers come from (a cassette of recorded traffic, a scripted model's
// script, or the configured providers for live evaluations), overrides
// that keep the run free of side effects (a tool answering a fixed result
// or a scripted command, an MCP server started another way, budgets), and
// assert blocks: HCL conditions over the run's result (run.answer,
// run.status, run.tool_calls, run.decisions, run.usage, run.iterations,
// run.journal) with the function library. expect_failures accepts a run
// that is denied or stopped by a limit; repeat and pass_rate run a live
// model's test N times and pass on a share of them.
//
// Load parses, checks and compiles test files (the diagnostics `symbi
// validate` prints, with ranges in the test file); Suite.Run runs them,
// in parallel where they are independent, through the engine, exactly as
// `symbi run` does: every run is journalled under the configuration's
// state directory and its id reported. Reports are text, JSON lines and
// JUnit XML. Export turns a finished run's journal into a cassette or a
// scripted model's script, so any run a user saw can become a test.
// docs/testing.md is the user's guide.
//
// This package sits between the command line and the engine and compiler:
// it must not be imported by anything but cmd/symbi.
package symbitest
