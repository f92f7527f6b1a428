package plan

// Names the engine reserves. The plan names them because the compiler keeps
// them free (a configured tool named terminate beside allow_terminate is an
// error), the engine offers the tools, and no MCP server's tool may take
// them: a rules pattern "delegate:target=critic" names the action, and the
// model, the journal and a policy could not tell a tool of that name from it.
const (
	// DelegateTool is the tool an agent with delegates gets: the model calls
	// it with a target agent and a task, and the engine turns the call into a
	// delegate action for the gate.
	DelegateTool = "delegate"
	// TerminateTool is the tool an agent with loop { allow_terminate = true }
	// gets: the model calls it with a reason, and the engine turns the call
	// into a terminate action for the gate.
	TerminateTool = "terminate"
	// RespondAction is a final answer as the gate sees it. No tool offers
	// it, but a rules pattern "respond" names it.
	RespondAction = "respond"
)

// ReservedName reports whether name is one of the engine's: delegate,
// respond or terminate.
func ReservedName(name string) bool {
	switch name {
	case DelegateTool, RespondAction, TerminateTool:
		return true
	}
	return false
}
