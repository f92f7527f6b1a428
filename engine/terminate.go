package engine

import (
	"encoding/json"
	"fmt"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// AgentTerminated is the reason of a run whose model ended it through the
// terminate tool, and whose policies allowed that: a stop without an
// answer, like a denial or a limit.
const AgentTerminated Reason = "agent_terminated"

// TerminatedError is the end of a run that the model asked for and the
// gate allowed. Reason is the model's (after redaction, as every error the
// engine reports).
type TerminatedError struct {
	Reason string
}

func (e *TerminatedError) Error() string {
	if e.Reason == "" {
		return "the agent ended the run"
	}
	return "the agent ended the run: " + e.Reason
}

// terminateSpec describes the terminate tool.
func terminateSpec() provider.ToolSpec {
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"reason": map[string]any{"type": "string", "description": "why the run ends without an answer"},
		},
		"required":             []string{"reason"},
		"additionalProperties": false,
	})
	return provider.ToolSpec{
		Name:        plan.TerminateTool,
		Description: "End the run without an answer, and say why (for example, the task cannot be done, or not safely). Use it instead of answering only when no useful answer is possible.",
		Parameters:  schema,
	}
}

// terminateAction is the action a call of the terminate tool proposes.
func terminateAction(c provider.ToolCall, args json.RawMessage) policy.Action {
	var t struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(args, &t)
	return policy.Action{Type: policy.Terminate, CallID: c.ID, Reason: t.Reason, Arguments: args}
}

// terminateNote is the observation of an allowed terminate call: the run
// ends after the turn, so no model reads it, but the journal's
// observations keep one per proposed call.
func terminateNote(reason string) string {
	return fmt.Sprintf("[run terminated] %s", reason)
}

// terminated returns the first allowed terminate action of a turn's gated
// actions, if any.
func terminated(gs []gated) (policy.Action, bool) {
	for _, g := range gs {
		if g.ok && g.approved.Action().Type == policy.Terminate {
			return g.approved.Action(), true
		}
	}
	return policy.Action{}, false
}
