package journal

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// Event is one journal line:
//
//	{"seq":1,"ts":"2026-12-02T13:30:00.123Z","run":"…","agent":"researcher","iteration":0,"event":"started","data":{…}}
//
// Seq starts at 1 and rises by one per line; Writer.Append assigns it and
// Time, so callers leave both zero.
type Event struct {
	Seq       int64           `json:"seq"`
	Time      time.Time       `json:"ts"`
	RunID     string          `json:"run"`
	Agent     string          `json:"agent"`
	Iteration int             `json:"iteration"`
	Type      string          `json:"event"`
	Data      json.RawMessage `json:"data,omitempty"`

	// Value, when set, is what Data decodes to, already decoded: a value
	// (not a pointer) of the *Data type matching Type. The engine sets it
	// on the events it hands an observer as they happen, so that showing
	// one does not decode the JSON it has just encoded; it is never
	// written, and no event read from a file has it. It may share memory
	// with the run: read it, never change it.
	Value any `json:"-"`
}

// Decode unmarshals the event's data into v, typically a pointer to the
// *Data struct matching e.Type. When the event carries a Value of v's
// type, Decode copies it instead.
func (e Event) Decode(v any) error {
	if e.Value != nil {
		if dst := reflect.ValueOf(v); dst.Kind() == reflect.Pointer && !dst.IsNil() && dst.Elem().Type() == reflect.TypeOf(e.Value) {
			dst.Elem().Set(reflect.ValueOf(e.Value))
			return nil
		}
	}
	if len(e.Data) == 0 {
		return fmt.Errorf("journal: %s event (seq %d) has no data", e.Type, e.Seq)
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("journal: %s event (seq %d) data: %w", e.Type, e.Seq, err)
	}
	return nil
}

// Event types, one per phase transition. docs/journal.md lists the data
// fields of each.
const (
	Started               = "started"
	ModelRouted           = "model_routed"
	ReasoningComplete     = "reasoning_complete"
	PolicyEvaluated       = "policy_evaluated"
	ApprovalRequested     = "approval_requested"
	ApprovalDecided       = "approval_decided"
	ToolsDispatched       = "tools_dispatched"
	ToolResult            = "tool_result"
	RecoveryTriggered     = "recovery_triggered"
	ObservationsCollected = "observations_collected"
	DelegationStarted     = "delegation_started"
	DelegationFinished    = "delegation_finished"
	CandidateStarted      = "candidate_started"
	CandidateFinished     = "candidate_finished"
	CandidateScored       = "candidate_scored"
	CandidateSelected     = "candidate_selected"
	KnowledgeInjected     = "knowledge_injected"
	Prehydrated           = "prehydrated"
	PlanCreated           = "plan_created"
	StepStarted           = "step_started"
	StepFinished          = "step_finished"
	ReflectionEvaluated   = "reflection_evaluated"
	Terminated            = "terminated"
)

// Approvals (issue 11): a decision found in the approval queue that the
// waiting run refused. Issue 17: a rule a person said to remember.
const (
	ApprovalRejected   = "approval_rejected"
	ApprovalRemembered = "approval_remembered"
)

// Crash safety (issue 11, item 5: nothing run twice, nothing paid for and
// forgotten). A model call is written ahead of the request, so a resume
// charges one that was in flight when the process died; a tool call that was
// dispatched before the crash but has no result, and that the resumed run
// did not run again, is recorded as such.
const (
	ModelCallStarted   = "model_call_started"
	ToolOutcomeUnknown = "tool_outcome_unknown"
)

// Events the engine hands its observers (`symbi run`'s live lines, its
// --json stream) but does not journal: one per streamed piece would cost
// the loop a line per piece, and reasoning_complete holds what they
// carry (the whole tool calls; the time to the first event as
// first_event_ms).
const (
	// ModelFirstEvent: the response to a model call sent its first event
	// (FirstEventData), once per call.
	ModelFirstEvent = "model_first_event"
	// ToolCallDelta: a piece of a tool call the model is writing
	// (ToolCallDeltaData; the piece of its arguments is the event's
	// delta).
	ToolCallDelta = "tool_call_delta"
)

// FirstEventData is a model_first_event: the model and how long after the
// request its first event came.
type FirstEventData struct {
	Model   string `json:"model"`
	AfterMS int64  `json:"after_ms"`
}

// ToolCallDeltaData names the call a tool_call_delta belongs to: its
// place among the turn's calls, and its id and tool in the piece that
// brings them.
type ToolCallDeltaData struct {
	Index int    `json:"index"`
	ID    string `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
}

// ModelCallStartedData is a model call about to be sent, with the
// estimate its budget reservation made (the preflight prompt estimate and
// the output allowance): what a resume charges when no reasoning_complete
// follows.
type ModelCallStartedData struct {
	Model                     string  `json:"model"`
	EstimatedPromptTokens     int64   `json:"estimated_prompt_tokens"`
	EstimatedCompletionTokens int64   `json:"estimated_completion_tokens"`
	EstimatedCostUSD          float64 `json:"estimated_cost_usd,omitempty"`
}

// ToolOutcomeUnknownData is a call of the interrupted attempt that was
// dispatched but has no result, as the resumed run settled it. OnResume is
// the tool's setting; Retried says it ran again (its tool_result follows),
// otherwise the model was told the outcome is unknown.
type ToolOutcomeUnknownData struct {
	CallID         string          `json:"call_id"`
	Tool           string          `json:"tool"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	IdempotencyKey string          `json:"idempotency_key"`
	OnResume       string          `json:"on_resume"` // retry | ask | report
	Retried        bool            `json:"retried"`
	Reason         string          `json:"reason,omitempty"` // why it was not run again
}

// Pinned tools (issue 17): a server or tool that differs from the lock
// file, and what the run did about it.
const (
	ToolDrift = "tool_drift"
)

// ToolDriftData is one difference between what a server (or command tool)
// is and what the lock file pins. Kind is the lockfile's kind of change
// (tool_changed, tool_added, launch_changed, server_unpinned,
// command_changed, command_unpinned); Summary and Details are its
// readable diff; Action is what on_drift did: refused (the run did not
// start, or stops), hidden (the tools were left out of what the model is
// offered) or warned. ListChanged: found when the server said its tools
// changed mid-run, not when it started.
type ToolDriftData struct {
	Kind        string   `json:"kind"`
	Server      string   `json:"server,omitempty"` // mcp_server address
	Tool        string   `json:"tool,omitempty"`
	Summary     string   `json:"summary"`
	Details     []string `json:"details,omitempty"`
	Action      string   `json:"action"`
	ListChanged bool     `json:"list_changed,omitempty"`
}

// EventTypes lists every event type in the order a run usually meets them.
func EventTypes() []string {
	return []string{
		Started, Prehydrated, KnowledgeInjected, ModelRouted, ReasoningComplete,
		PolicyEvaluated, ApprovalRequested, ApprovalRejected, ApprovalDecided, ApprovalRemembered, ToolsDispatched,
		ToolResult, RecoveryTriggered, ObservationsCollected, DelegationStarted,
		DelegationFinished, PlanCreated, StepStarted, StepFinished,
		ReflectionEvaluated, CandidateStarted, CandidateFinished, CandidateScored,
		CandidateSelected, Terminated,
		ModelCallStarted, ToolOutcomeUnknown, // crash safety
		ToolDrift, // pinned tools
	}
}

// StartedData opens a run. Resume holds the seq the run resumed after, when
// this is a continuation of an interrupted run written to the same journal.
// PlanDigest is seal.Digest of the plan.json the run runs: resume refuses a
// plan.json that no longer matches it (CheckPlan).
type StartedData struct {
	Agent         string      `json:"agent,omitempty"`     // agent address
	BestOfN       string      `json:"best_of_n,omitempty"` // best_of_n address, for a best-of-N run
	Mode          string      `json:"mode,omitempty"`
	Input         string      `json:"input"`
	SourceHash    string      `json:"source_hash,omitempty"` // the plan's source_hash
	Budget        *BudgetInfo `json:"budget,omitempty"`
	Resume        int64       `json:"resume_after_seq,omitempty"`
	JournalFormat int         `json:"journal_format,omitempty"` // FormatVersion; absent: 1, unsigned
	PlanDigest    string      `json:"plan_digest,omitempty"`
	// TraceID is the OpenTelemetry trace the run's spans are in (32 hex
	// digits), when telemetry is on: the journal and the trace find each
	// other by it. Older readers ignore it, so the format stays 2.
	TraceID string `json:"trace_id,omitempty"`
	// WithheldTools are tools of the agent's MCP servers that the model is
	// not offered, and why (one that requires MCP task augmentation).
	WithheldTools []WithheldTool `json:"withheld_tools,omitempty"`
}

// WithheldTool is a server's tool that a run does not offer to its model.
type WithheldTool struct {
	Tool   string `json:"tool"`   // the server's name for it
	Source string `json:"source"` // the mcp_server, or the tool block that wraps it
	Reason string `json:"reason"`
}

// BudgetInfo is the set (non-zero) limits by field name, as policies see
// them, e.g. {"max_total_tokens": 100000}.
type BudgetInfo = map[string]any

// ModelRoutedData records one routing decision and every model the router
// turned down, with why.
type ModelRoutedData struct {
	Router          string          `json:"router,omitempty"`
	Strategy        string          `json:"strategy,omitempty"`
	Model           string          `json:"model"`
	Reason          string          `json:"reason,omitempty"`
	EstimatedTokens int64           `json:"estimated_tokens,omitempty"`
	Rejected        []RejectedModel `json:"rejected,omitempty"`
}

// RejectedModel is a model the router did not pick.
type RejectedModel struct {
	Model  string `json:"model"`
	Reason string `json:"reason"`
}

// ReasoningCompleteData is one model turn: what it said, the actions it
// proposed and what it cost.
type ReasoningCompleteData struct {
	Model        string              `json:"model"`
	Content      string              `json:"content,omitempty"`
	ToolCalls    []provider.ToolCall `json:"tool_calls,omitempty"`
	Actions      []policy.Action     `json:"actions,omitempty"`
	Usage        provider.Usage      `json:"usage"`
	UsageKnown   bool                `json:"usage_known"`
	CostUSD      float64             `json:"cost_usd,omitempty"`
	FinishReason string              `json:"finish_reason,omitempty"`
	DurationMS   int64               `json:"duration_ms"`
	// Reasoning is the reasoning text the model sent apart from its
	// answer, when it sent any.
	Reasoning string `json:"reasoning,omitempty"`
	// FinishReasonMissing: the turn ended complete (its stream's [DONE])
	// without a finish reason, as some servers send it.
	FinishReasonMissing bool `json:"finish_reason_missing,omitempty"`
	// FirstEventMS is how long after the request the response's first
	// event came (the model_first_event the observers saw); absent when
	// it came within a millisecond.
	FirstEventMS int64 `json:"first_event_ms,omitempty"`
}

// PolicyEvaluatedData holds one gate decision per proposed action.
type PolicyEvaluatedData struct {
	Decisions []GateRecord `json:"decisions"`
	Denied    int          `json:"denied"`
}

// GateRecord is one action and the decision the policy chain reached, with
// the individual decisions that led to it. Action is what the policies
// decided on, with path arguments in canonical form; RawArguments are the
// arguments as the model sent them, when canonicalising changed them.
type GateRecord struct {
	Action       policy.Action     `json:"action"`
	RawArguments json.RawMessage   `json:"raw_arguments,omitempty"`
	Decision     policy.Decision   `json:"decision"`
	Trail        []policy.Decision `json:"trail,omitempty"`
	// ModelArguments are the model's arguments when a person approved
	// other ones (EditedBy): Action holds the person's, which went through
	// the gate again (Trail has both gates' decisions).
	ModelArguments json.RawMessage `json:"model_arguments,omitempty"`
	EditedBy       string          `json:"edited_by,omitempty"`
	// Shadow are the decisions of the agent's policies in shadow mode on
	// the action: journalled, never enforced (policy.Chain.Gate).
	Shadow []policy.Decision `json:"shadow,omitempty"`
}

// ApprovalRequestedData is a tool call waiting for a person.
// ArgumentsDigest is policy.ArgumentsDigest of the action: the digest the
// person is shown and any decision must be bound to.
type ApprovalRequestedData struct {
	CallID          string          `json:"call_id"`
	Tool            string          `json:"tool"`
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsDigest string          `json:"arguments_digest,omitempty"`
	Queue           string          `json:"queue,omitempty"` // empty: the terminal
	Reason          string          `json:"reason,omitempty"`
}

// ApprovalRejectedData is a decision the approval queue held for a waiting
// request and the run refused, because it does not prove it came from
// `symbi approve` or `symbi deny` for this very request: Reason says why
// (no proof, bad proof, bound to another run, request, action or other
// arguments, unreadable). Approved and By are what the refused decision
// claimed. The run goes on waiting.
type ApprovalRejectedData struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	RequestID string `json:"request_id"`
	Reason    string `json:"reason"`
	Approved  bool   `json:"approved,omitempty"`
	By        string `json:"by,omitempty"`
}

// ApprovalDecidedData is the person's answer; a timeout is a denial.
// Code says why an action was not approved: no_approver (nobody could be
// asked: no terminal and no approval queue), approval_timeout (nobody
// answered in time), denied_by_approver (a person said no) or
// approval_error (asking failed). Via is how the answer came: terminal,
// queue, timeout, or standing (a rule the person remembered earlier in
// the run, Rule). Arguments are the person's edited arguments, with their
// digest: the action then went through the gate again with them.
type ApprovalDecidedData struct {
	CallID          string          `json:"call_id"`
	Tool            string          `json:"tool"`
	Approved        bool            `json:"approved"`
	By              string          `json:"by,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	TimedOut        bool            `json:"timed_out,omitempty"`
	Code            string          `json:"code,omitempty"`
	Via             string          `json:"via,omitempty"`
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsDigest string          `json:"arguments_digest,omitempty"`
	Rule            string          `json:"rule,omitempty"`
}

// Why an action a person had to decide was not approved
// (ApprovalDecidedData.Code).
const (
	NoApprover       = "no_approver"
	ApprovalTimeout  = "approval_timeout"
	DeniedByApprover = "denied_by_approver"
	ApprovalError    = "approval_error"
)

// ApprovalRememberedData is a standing approval a person confirmed ("approve
// and remember"): from now on, for the rest of the run or until Until, a
// call the rule covers (its tool, every argument as the rule says) that a
// policy asks about is approved without asking.
type ApprovalRememberedData struct {
	CallID   string          `json:"call_id"`
	Tool     string          `json:"tool"`
	Rule     string          `json:"rule"` // as the person was shown it
	Standing policy.Standing `json:"standing"`
	By       string          `json:"by,omitempty"`
}

// ToolsDispatchedData lists the approved calls sent to executors together.
type ToolsDispatchedData struct {
	Calls       []DispatchedCall `json:"calls"`
	Concurrency int              `json:"concurrency"`
}

// DispatchedCall is one approved tool call.
type DispatchedCall struct {
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolResultData is one tool call's outcome. ErrorKind is one of timeout,
// transport, rate_limited, invalid_arguments, error, circuit_open.
type ToolResultData struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Output    string `json:"output,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"error_kind,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// OriginalBytes is the size of a truncated output before the cut,
	// when known (a command tool is stopped at the cap, so its is not).
	OriginalBytes int64 `json:"original_bytes,omitempty"`
	Cached        bool  `json:"cached,omitempty"`
	Attempts      int   `json:"attempts,omitempty"`
	DurationMS    int64 `json:"duration_ms"`
}

// RecoveryTriggeredData is one step of a recovery chain.
type RecoveryTriggeredData struct {
	CallID    string `json:"call_id,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Strategy  string `json:"strategy"` // retry | fallback | cached_result | llm_recovery | escalate | dead_letter
	Attempt   int    `json:"attempt,omitempty"`
	Error     string `json:"error"`
	ErrorKind string `json:"error_kind,omitempty"`
}

// ObservationsCollectedData closes an iteration's Act phase.
type ObservationsCollectedData struct {
	Count  int `json:"count"`
	Denied int `json:"denied"`
	Errors int `json:"errors"`
}

// DelegationStartedData is a sub-run of another agent.
type DelegationStartedData struct {
	CallID string `json:"call_id,omitempty"`
	Target string `json:"target"`
	Task   string `json:"task"`
	Depth  int    `json:"depth"`
	RunID  string `json:"run_id,omitempty"` // the sub-run's own journal, when it has one
}

// DelegationFinishedData is how a delegation ended.
type DelegationFinishedData struct {
	CallID     string        `json:"call_id,omitempty"`
	Target     string        `json:"target"`
	Reason     string        `json:"reason"` // the sub-run's termination reason
	Answer     string        `json:"answer,omitempty"`
	Error      string        `json:"error,omitempty"`
	Usage      budget.Amount `json:"usage"`
	DurationMS int64         `json:"duration_ms"`
}

// CandidateStartedData is one best-of-N candidate and its varied request
// fields (e.g. {"temperature": 0.35}).
type CandidateStartedData struct {
	Index int            `json:"index"`
	Vary  map[string]any `json:"vary,omitempty"`
}

// CandidateFinishedData is a candidate's generation outcome. Status is one
// of eligible, rejected, generation_failed, scoring_failed, budget_exceeded,
// side_effect_blocked, cancelled, timed_out, skipped.
type CandidateFinishedData struct {
	Index      int           `json:"index"`
	Status     string        `json:"status"`
	Content    string        `json:"content,omitempty"`
	Error      string        `json:"error,omitempty"`
	Usage      budget.Amount `json:"usage"`
	DurationMS int64         `json:"duration_ms"`
}

// CandidateScoredData is the scorer's verdict on one candidate.
type CandidateScoredData struct {
	Index     int           `json:"index"`
	Score     float64       `json:"score"`
	Accepted  bool          `json:"accepted"`
	Rationale string        `json:"rationale,omitempty"`
	Error     string        `json:"error,omitempty"`
	Usage     budget.Amount `json:"usage"`
}

// CandidateSelectedData is the selector's choice; Index is -1 when no
// candidate was eligible.
type CandidateSelectedData struct {
	Index    int     `json:"index"`
	Selector string  `json:"selector"` // highest_score | majority_vote | command
	Key      string  `json:"key,omitempty"`
	Votes    int     `json:"votes,omitempty"`
	Score    float64 `json:"score"`
	Reason   string  `json:"reason,omitempty"`
}

// KnowledgeInjectedData records the facts put before a reasoning step.
type KnowledgeInjectedData struct {
	Store string   `json:"store"`
	Query string   `json:"query,omitempty"`
	Facts []string `json:"facts"`
}

// PrehydratedData records the references resolved from the input before
// the first step.
type PrehydratedData struct {
	References []Reference `json:"references"`
	Tokens     int         `json:"tokens"`
}

// Reference is one resolved (or failed) reference.
type Reference struct {
	Kind   string `json:"kind"` // url | file | a custom pattern name
	Value  string `json:"value"`
	Tool   string `json:"tool,omitempty"`
	Tokens int    `json:"tokens,omitempty"`
	Error  string `json:"error,omitempty"`
}

// PlanCreatedData is a plan_execute plan, or a replan.
type PlanCreatedData struct {
	Steps  []PlanStep `json:"steps"`
	Replan bool       `json:"replan,omitempty"`
}

// PlanStep is one step of a plan_execute plan.
type PlanStep struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	DependsOn   []string `json:"depends_on,omitempty"`
}

// StepStartedData marks a plan step beginning.
type StepStartedData struct {
	StepID  string `json:"step_id"`
	Attempt int    `json:"attempt"`
}

// StepFinishedData is a plan step's outcome.
type StepFinishedData struct {
	StepID     string `json:"step_id"`
	Status     string `json:"status"` // done | failed | skipped
	Output     string `json:"output,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// ReflectionEvaluatedData is one reflect_and_retry evaluation.
type ReflectionEvaluatedData struct {
	Attempt   int                `json:"attempt"`
	Evaluator string             `json:"evaluator"` // agent address, or "rubric"
	Score     float64            `json:"score"`
	Scores    map[string]float64 `json:"scores,omitempty"` // per rubric criterion
	Verdict   string             `json:"verdict"`          // pass | revise | retry | block
	Feedback  string             `json:"feedback,omitempty"`
}

// TerminatedData closes a run. Reason is one of completed, max_iterations,
// budget_exceeded, timeout, policy_denial, cancelled, error; Limit names the
// budget field when Reason is budget_exceeded.
type TerminatedData struct {
	Reason     string        `json:"reason"`
	Limit      string        `json:"limit,omitempty"`
	Iterations int           `json:"iterations"`
	Usage      budget.Amount `json:"usage"`
	// Reserved is what the run's budget still held for calls in flight,
	// reserved but not settled, when it ended; nil when nothing (a run
	// settles its own calls before it ends; a plan step's sibling may not
	// have).
	Reserved   *budget.Amount `json:"reserved,omitempty"`
	DurationMS int64          `json:"duration_ms"`
	Answer     string         `json:"answer,omitempty"`
	Error      string         `json:"error,omitempty"`
}
