package policy

import (
	"context"
	"encoding/json"
	"time"
)

// ActionType is what an agent proposes to do.
type ActionType string

const (
	ToolCall  ActionType = "tool_call"
	Delegate  ActionType = "delegate"
	Respond   ActionType = "respond"
	Terminate ActionType = "terminate"
)

// Action is one proposed action, as policies see it (the "action" member of
// the OPA input document).
type Action struct {
	Type      ActionType      `json:"type"`
	Tool      string          `json:"tool,omitempty"` // tool name, without "tool."
	CallID    string          `json:"call_id,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // a JSON object
	Effect    string          `json:"effect,omitempty"`
	Tags      []string        `json:"tags,omitempty"`
	Target    string          `json:"target,omitempty"`  // delegate: agent name
	Task      string          `json:"task,omitempty"`    // delegate
	Content   string          `json:"content,omitempty"` // respond
	Reason    string          `json:"reason,omitempty"`  // terminate
}

// AgentInfo is the "agent" member of the input document.
type AgentInfo struct {
	Name            string `json:"name"`
	Model           string `json:"model"`
	DelegationDepth int    `json:"delegation_depth"`
}

// Usage is what a run has consumed so far.
type Usage struct {
	ModelCalls       int64   `json:"model_calls"`
	ToolCalls        int64   `json:"tool_calls"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// RunInfo is the "run" member of the input document. Budget holds the set
// (non-zero) limits by field name, e.g. {"max_total_tokens": 100000}.
type RunInfo struct {
	ID        string         `json:"id"`
	Iteration int            `json:"iteration"`
	Usage     Usage          `json:"usage"`
	Budget    map[string]any `json:"budget"`
}

// Input is everything a policy may look at. Context holds trusted values from
// the configuration or the command line, never from the model.
type Input struct {
	Action  Action         `json:"action"`
	Agent   AgentInfo      `json:"agent"`
	Run     RunInfo        `json:"run"`
	Context map[string]any `json:"context"`
}

// Outcome is the kind of a decision.
type Outcome string

const (
	Allow         Outcome = "allow"
	Deny          Outcome = "deny"
	Modify        Outcome = "modify"
	Ask           Outcome = "ask"
	NotApplicable Outcome = "not_applicable"
)

// Decision is one policy's answer.
type Decision struct {
	Outcome   Outcome         `json:"decision"`
	Reason    string          `json:"reason,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // modify: the new arguments
	Policy    string          `json:"policy,omitempty"`    // policy address
	Engine    string          `json:"engine,omitempty"`    // rules | opa | cedar | chain | person
	Elapsed   time.Duration   `json:"elapsed_ns,omitempty"`
}

// Gate is one policy engine, prepared once and safe for concurrent use. An
// engine that fails returns a Deny whose reason carries the error: Decide
// never lets an error through as an allow.
type Gate interface {
	Decide(ctx context.Context, in Input) Decision
}
