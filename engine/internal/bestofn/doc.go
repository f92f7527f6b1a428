// Package bestofn is the pure part of a best_of_n block: the Runner that
// generates and scores N candidates at most max_concurrency at a time under
// the block's timeout and gives each its status, the selectors
// (highest_score with its tie rules, majority_vote), and reading a score
// from an expr or command scorer's value. The aggregate budget that funds
// every stage is a budget.Accountant (ReserveStage), which the engine holds.
//
// How a candidate is generated or judged (a run of the agent, a process)
// the engine decides through the Runner's functions (engine/bestofn.go).
// This package must not import the engine, policy or a provider; its
// candidates' events are journal types, recorded through a function.
package bestofn
