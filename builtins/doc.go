// Package builtins runs tools: the built-in tools (calculator, clock,
// read_file, list_dir, write_file, http_get, recall_knowledge,
// store_knowledge, delegate), command tools (real processes), http tools and
// MCP tools (through the official MCP Go SDK). It validates arguments against
// each tool's JSON Schema, keeps a circuit breaker per tool, classifies
// failures, and carries out recovery chains.
//
// A tool runs only for a policy.Approved action: there is no exported way to
// execute a tool without a gate decision.
//
// This package must not import interp or the engine.
package builtins
