// Package policy decides every action an agent proposes before it happens.
//
// One Gate interface, three engines (built-in rules, OPA/Rego, Cedar), and a
// Chain that runs an agent's policies in order: a deny stops the chain, a
// modify hands the modified action on, and when every policy is
// not_applicable the chain applies on_no_policy. An engine error is a deny
// (fail closed). Engines are prepared once and shared across goroutines.
//
// The only way to obtain an Approved action is through Chain.Gate, and tool
// executors accept only Approved values: the phase order Reason → Gate → Act
// is enforced by the type system.
//
// This package must not import interp, the engine, providers or tools.
package policy
