package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// ActionType is what an agent proposes to do.
type ActionType string

// The action types other than a tool call are the names the engine
// reserves (package plan), so no tool can be mistaken for one.
const (
	ToolCall  ActionType = "tool_call"
	Delegate  ActionType = plan.DelegateTool
	Respond   ActionType = plan.RespondAction
	Terminate ActionType = plan.TerminateTool
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

// Usage is what a run has consumed so far: the input's run.usage. It is a
// plain type of its own, so this package needs nothing of the budget's; the
// engine converts the budget's budget.Amount, which has the same fields.
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
	// Version is the digest of what the policy decided with (Version):
	// which version of it decided.
	Version string `json:"version,omitempty"`
	// EngineError marks a deny that is not the policy's decision but an
	// engine's failure to reach one, mapped to deny (fail closed): an
	// evaluation error, an undefined or malformed OPA result, a Cedar
	// request that does not validate, a panic, a cancelled context.
	EngineError bool `json:"engine_error,omitempty"`
	// Order is the decision's place in the order the chain evaluated its
	// policies, from 1: the enforced policies in the agent's order, then
	// the shadow ones (see Chain.Gate). Zero outside a chain.
	Order int `json:"order,omitempty"`
	// Shadow marks the decision of a policy in shadow mode: journalled,
	// never enforced.
	Shadow bool `json:"shadow,omitempty"`
}

// Gate is one policy engine, prepared once and safe for concurrent use. An
// engine that fails returns a Deny whose reason carries the error: Decide
// never lets an error through as an allow.
type Gate interface {
	Decide(ctx context.Context, in Input) Decision
}

// valid reports whether t is one of the four action types.
func (t ActionType) valid() bool {
	switch t {
	case ToolCall, Delegate, Respond, Terminate:
		return true
	}
	return false
}

// ParseAction reads an action object as written in a policy_test block or on
// the command line (`--action '{"type":"tool_call","tool":"shell",...}'`).
// A "tool." or "agent." prefix on tool and target is dropped, so an address
// works where a name is expected.
func ParseAction(raw []byte) (Action, error) {
	if err := InvalidJSON(raw); err != nil {
		return Action{}, fmt.Errorf("action: %w", err)
	}
	var a Action
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Action{}, fmt.Errorf("action: %w", err)
	}
	if dec.More() {
		return Action{}, errors.New("action: trailing data after the JSON object")
	}
	if a.Type == "" {
		a.Type = ToolCall
	}
	a.Tool = strings.TrimPrefix(a.Tool, "tool.")
	a.Target = strings.TrimPrefix(a.Target, "agent.")
	if err := a.check(); err != nil {
		return Action{}, err
	}
	return a, nil
}

// check reports an action that no policy could sensibly decide.
func (a Action) check() error {
	if !a.Type.valid() {
		return fmt.Errorf("action: unknown type %q (want tool_call, delegate, respond or terminate)", a.Type)
	}
	if a.Type == ToolCall && a.Tool == "" {
		return errors.New("action: a tool_call needs a tool")
	}
	if a.Type == Delegate && a.Target == "" {
		return errors.New("action: a delegate needs a target")
	}
	if len(a.Arguments) > 0 {
		if _, err := argumentsObject(a.Arguments); err != nil {
			return fmt.Errorf("action: arguments: %w", err)
		}
	}
	return nil
}

// InvalidJSON says where raw stops being JSON: nil when it is one valid
// JSON value, else an error with the offset of the byte where reading
// failed (counted from 1) and its line and column, e.g. "not valid JSON:
// invalid character 'n' looking for beginning of object key string, at
// offset 2 (line 1, column 2)". It is how a model's tool-call arguments,
// --action and the REPL's :call report text that is not JSON, rather than
// as a string that is not an object.
func InvalidJSON(raw []byte) error {
	if json.Valid(raw) {
		return nil
	}
	var v any
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("not valid JSON: the text is empty")
	}
	off := min(max(se.Offset, 1), int64(len(raw)))
	line, col := 1, 1
	for _, r := range string(raw[:off-1]) {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("not valid JSON: %s, at offset %d (line %d, column %d)", se.Error(), off, line, col)
}

// argumentsObject decodes a JSON object of arguments, keeping numbers exact.
// Empty input is an empty object.
func argumentsObject(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", jsonKind(v))
	}
	return m, nil
}

// decodeJSON decodes exactly one JSON value with numbers kept as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// subject is the name and arguments the built-in rules match against. A
// tool call is its tool; the other actions are named by their type, with
// their fields as arguments, so "delegate:target=critic" and
// "respond:content=*password*" read like tool patterns.
func (a Action) subject() (string, map[string]any, error) {
	switch a.Type {
	case ToolCall:
		args, err := argumentsObject(a.Arguments)
		return a.Tool, args, err
	case Delegate:
		return string(Delegate), map[string]any{"target": a.Target, "task": a.Task}, nil
	case Respond:
		return string(Respond), map[string]any{"content": a.Content}, nil
	case Terminate:
		return string(Terminate), map[string]any{"reason": a.Reason}, nil
	}
	return "", nil, fmt.Errorf("unknown action type %q", a.Type)
}

// String names the action for reasons and prompts: `tool_call "shell"`.
func (a Action) String() string {
	switch a.Type {
	case ToolCall:
		return fmt.Sprintf("tool_call %q", a.Tool)
	case Delegate:
		return fmt.Sprintf("delegate to %q", a.Target)
	}
	return string(a.Type)
}

// ParseArguments reads arguments a person wrote (`symbi approve
// --arguments`): one JSON object, returned in canonical form (keys sorted,
// no spacing, numbers as written), the form the tool gets.
func ParseArguments(raw []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("want a JSON object, got nothing")
	}
	obj, err := argumentsObject(raw)
	if err != nil {
		return nil, err
	}
	return marshalCanonical(obj)
}
