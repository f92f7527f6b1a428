# Rewrites every touch call's reason; says nothing about anything else.
package e2e.modify

default decision := {"decision": "not_applicable"}

decision := {"decision": "modify", "reason": "e2e: reasons are rewritten", "arguments": {"reason": "rewritten by opa"}} if {
	input.action.type == "tool_call"
	input.action.tool == "touch"
}
