package policy

// Approved is an action that passed the gate. Its fields are unexported and
// only this package constructs it (through Chain.Gate, or a person's approval
// of an Ask), so code outside policy cannot forge one: an executor that takes
// an Approved cannot be reached without a gate decision.
type Approved struct {
	action    Action
	decisions []Decision
}

func approve(a Action, decisions []Decision) Approved {
	return Approved{action: a, decisions: decisions}
}

// Action is the action as approved, with any arguments a modify decision set.
func (a Approved) Action() Action { return a.action }

// Decisions are the per-policy decisions that led to the approval.
func (a Approved) Decisions() []Decision { return a.decisions }

// Valid reports whether a came from the gate (the zero value did not).
func (a Approved) Valid() bool { return a.action.Type != "" }
