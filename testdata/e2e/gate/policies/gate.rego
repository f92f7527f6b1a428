# Denies the touch tool; has nothing to say about anything else.
package e2e.gate

default decision := {"decision": "not_applicable"}

decision := {"decision": "deny", "reason": "e2e: opa forbids touch"} if {
	input.action.type == "tool_call"
	input.action.tool == "touch"
}
