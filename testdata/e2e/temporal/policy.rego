package e2e.gate

default decision := {"decision": "not_applicable"}

decision := {"decision": "allow", "reason": "arithmetic is harmless"} if {
	input.action.type == "tool_call"
	input.action.tool == "calculator"
}

decision := {"decision": "allow", "reason": "the ledger takes any line"} if {
	input.action.type == "tool_call"
	input.action.tool == "write"
}

decision := {"decision": "ask", "reason": "a person decides"} if {
	input.action.type == "tool_call"
	input.action.tool == "approve_me"
}
