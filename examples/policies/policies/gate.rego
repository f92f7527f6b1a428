# The OPA half of the pack: what a tool call may do, by effect, arguments and
# spend. symbi evaluates data.symbi.gate.decision for every action; the input
# document is described in docs/schemas/opa-input.schema.json.
#
# The decision is an object {decision, reason, arguments}. Anything this
# module does not address is not_applicable, so the next policy in the
# agent's chain (the Cedar grants) decides it.
package symbi.gate

default decision := {"decision": "not_applicable"}

# The kinds are tried in this order and the first that has an entry decides,
# so a deny is never hidden behind an allow. Within a kind the first entry
# (sets are ordered) decides, so two denials never conflict.
decision := first(denials) if count(denials) > 0
else := first(asks) if count(asks) > 0
else := first(modifications) if count(modifications) > 0
else := first(allowances) if count(allowances) > 0

first(set) := [x | some x in set][0]

# Spend: stop tool calls once the run has used a fraction of its budget, so
# the agent still has room to answer.
denials contains {"decision": "deny", "reason": sprintf("spend limit: the run has used $%.4f of its $%.2f budget; answer with what you have", [input.run.usage.cost_usd, input.run.budget.max_cost_usd])} if {
	input.action.type == "tool_call"
	input.run.budget.max_cost_usd > 0
	input.run.usage.cost_usd >= input.run.budget.max_cost_usd * data.spend.stop_at_fraction
}

denials contains {"decision": "deny", "reason": sprintf("token limit: the run has used %d of its %d tokens; answer with what you have", [input.run.usage.total_tokens, input.run.budget.max_total_tokens])} if {
	input.action.type == "tool_call"
	input.run.budget.max_total_tokens > 0
	input.run.usage.total_tokens >= input.run.budget.max_total_tokens * data.spend.stop_at_fraction
}

# Destructive effects never run on a policy's say-so alone: a person approves
# each one (at the terminal, or with `symbi approve ID`).
asks contains {"decision": "ask", "reason": sprintf("%s is destructive: a person must approve it", [input.action.tool])} if {
	input.action.type == "tool_call"
	input.action.effect == "destructive"
}

# Searches ask for at most data.search.max_results results.
modifications contains {
	"decision": "modify",
	"reason": sprintf("max_results capped at %d", [data.search.max_results]),
	"arguments": object.union(input.action.arguments, {"max_results": data.search.max_results}),
} if {
	input.action.tool == "web_search"
	input.action.arguments.max_results > data.search.max_results
}
