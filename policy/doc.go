// Package policy decides every action an agent proposes before it happens.
//
// One Gate interface, three engines — built-in rules (NewRules), OPA/Rego v1
// (an OPAEngine: package policy/opa in-process, or the symbi-opa helper
// through policy/opaproc, registered with RegisterOPA) and Cedar
// (NewCedar) — each prepared once by FromPlan and safe for concurrent use: a
// decision only builds its input and evaluates. Without a registered OPA
// engine an opa policy does not load (ErrNoOPAEngine). Any engine
// failure is a Deny whose reason carries the error (fail closed). A Loader
// prepares several policies of one plan, deriving what they share from the
// plan (the Cedar entities, each Cedar schema) once.
//
// A Chain runs an agent's policies in order (NewChain with []Link{Address,
// Gate}, or ChainFromPlan): a deny stops the chain, a modify hands the
// modified action on after its arguments pass the injected tool-schema
// validator, an ask is remembered (a later deny still wins), and when every
// policy is not_applicable the chain applies on_no_policy to tool calls and
// delegations and allows respond and terminate. Chain.Gate returns a Verdict:
// the final Decision, every policy's Decisions, and an Approved that is valid
// only when the action may run now. When Verdict.Ask is set (an ask, or a
// tool with approval = "always"), Chain.Resolve puts the question to an
// Approver (TerminalApprover, or QueueApprover over the file queue in
// <state_dir>/approvals/) and returns the Approved on a person's yes, with
// the ApprovalRecord (who, when, how) for the journal. A decision in the
// queue counts only with a proof: an HMAC under the state directory's key
// (package seal) that binds it to the waiting request's run, ID, action and
// ArgumentsDigest (proof.go); the waiter checks it against the Request it
// holds in memory. Every approver shows a person the same Prompt: the
// arguments rendered bounded and escaped (RenderArguments), and their
// digest.
//
// Gate and Resolve are the only ways to obtain an Approved, and tool
// executors accept only Approved values: the phase order Reason → Gate → Act
// is enforced by the type system.
//
// RunTests and Explain hold the logic of `symbi policy test` and
// `symbi policy eval --explain`. docs/policy.md is the user's guide.
//
// This package must not import interp, the engine, budget, providers or
// builtins, nor OPA; it may import plan and seal. Its input carries its own plain
// Usage rather than the budget's Amount.
package policy
