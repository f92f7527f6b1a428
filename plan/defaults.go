package plan

import (
	"path"
	"time"
)

// The defaults of the language, in one place.
//
// Every value the compiler fills into a plan for an attribute left out is
// defined here, as a constant or as a function that returns a block's
// settings with its defaults filled (a new value on each call, so nobody can
// change them for everyone). They live in package plan because a plan is
// where defaults become visible: `symbi plan` shows them, and everything that
// reads plans (the engine, the toolbox, the providers, the router, the
// policies) falls back to the same values for a plan made without the
// compiler, rather than writing them again. docs/language.md's attribute
// tables are checked against what the compiler fills (interp's
// TestLanguageDocTables), so a change here fails that test until the docs
// say the same.

// Settings of the `symbi` block.
const (
	DefaultStateDir    = ".symbi"
	DefaultJournalSync = "background"
	DefaultWorkspace   = "." // the configuration directory
	// DefaultTaskQueue is the task queue of runs on Temporal (`symbi
	// worker`, `symbi run --temporal`) when neither a flag nor the
	// settings' temporal block names one.
	DefaultTaskQueue = "symbi"
)

// DefaultSettings is a configuration without a `symbi` block.
func DefaultSettings() Settings {
	return Settings{StateDir: DefaultStateDir, JournalSync: DefaultJournalSync, Workspace: DefaultWorkspace}
}

// DefaultTelemetry is a telemetry block with every attribute left out.
func DefaultTelemetry() Telemetry {
	return Telemetry{
		Protocol:        "http/protobuf",
		ServiceName:     "symbi",
		TracesExporter:  "otlp",
		MetricsExporter: "otlp",
		Sampler:         "parentbased_always_on",
		OnFailure:       "ignore",
	}
}

// Where an openai model connects, and which environment variable holds its
// key, when the block does not say.
const (
	DefaultOpenAIBaseURL      = "https://api.openai.com/v1"
	DefaultOpenAIAPIKeyEnv    = "OPENAI_API_KEY"
	DefaultAnthropicBaseURL   = "https://api.anthropic.com"
	DefaultAnthropicAPIKeyEnv = "ANTHROPIC_API_KEY"
)

// The bounds of a model's max_response_bytes, and its default. A response
// is journalled whole in one journal line of at most 64 MiB, twice (as the
// turn and as the message) and JSON-escaped: at 16 MiB it fits unless most
// of its text needs escaping.
const (
	DefaultMaxResponseBytes = 8 << 20
	MinMaxResponseBytes     = 1 << 10
	MaxMaxResponseBytes     = 16 << 20
)

// Anthropic models: the max_tokens a request carries when it names no
// output limit (the API requires one), and the least thinking budget the
// API accepts.
const (
	DefaultMaxTokens        = 4096
	MinThinkingBudgetTokens = 1024
)

// DefaultModel is a model block of provider with every optional attribute
// left out: the capabilities of a chat model with tools, the middle of the
// routing scales, and, for openai, OpenAI's own endpoint.
func DefaultModel(provider string) Model {
	m := Model{
		Provider:         provider,
		Capabilities:     []string{"json", "streaming", "tools"},
		ContextWindow:    128000,
		Quality:          0.5,
		Latency:          0.5,
		MaxResponseBytes: DefaultMaxResponseBytes,
		Timeouts: ModelTimeouts{
			Total:      Duration(2 * time.Minute),
			Connect:    Duration(10 * time.Second),
			FirstEvent: Duration(30 * time.Second),
			Idle:       Duration(30 * time.Second),
		},
		Retry: TransportRetry{
			MaxAttempts: 3,
			Backoff:     Duration(500 * time.Millisecond),
			MaxBackoff:  Duration(30 * time.Second),
			Jitter:      0.2,
		},
	}
	switch provider {
	case "openai":
		m.BaseURL = Lit(DefaultOpenAIBaseURL)
		m.APIKeyEnv = DefaultOpenAIAPIKeyEnv
	case "anthropic":
		m.BaseURL = Lit(DefaultAnthropicBaseURL)
		m.APIKeyEnv = DefaultAnthropicAPIKeyEnv
		m.MaxTokens = DefaultMaxTokens
		m.Thinking = "off"
		m.PromptCache = "none"
	}
	return m
}

// DefaultRouterStrategy is a router's strategy when it names none.
const DefaultRouterStrategy = "balanced"

// DefaultEffect is the effect of a tool that says nothing about its side
// effects (and of an MCP server's tools): unknown side effects are assumed
// to write.
const DefaultEffect = "write"

// DefaultMaxOutputBytes caps a tool's output when its block sets no
// max_output_bytes: 64 KiB, about 16,000 tokens, a good part of a context
// window but not all of it. The toolbox applies it to a plan made without
// the compiler that leaves the field zero.
const DefaultMaxOutputBytes = 64 << 10

// DefaultToolTimeout bounds one tool call: a tool block's timeout and an
// agent's loop.tool_timeout, the shorter of which applies.
const DefaultToolTimeout = Duration(30 * time.Second)

// DefaultTool is a tool block with every optional attribute left out. A
// builtin brings its own effect and idempotence, an MCP tool its server's
// effect, and on_resume follows the effect (DefaultOnResume).
func DefaultTool() Tool {
	cb := DefaultCircuitBreaker()
	return Tool{
		Effect:         DefaultEffect,
		Approval:       "policy",
		Timeout:        DefaultToolTimeout,
		MaxOutputBytes: DefaultMaxOutputBytes,
		CircuitBreaker: &cb,
	}
}

// DefaultOnResume is a tool's on_resume when its block sets none (and the
// engine's choice for a tool without a block, such as an MCP server's, or
// a plan saved before on_resume existed): a call that may have changed
// the world is reported, never silently repeated; one that only reads is
// retried.
func DefaultOnResume(effect string) string {
	if effect == "none" || effect == "read" {
		return "retry"
	}
	return "report"
}

// Defaults of a tool's executor blocks: a command runs in the configuration
// directory; an http tool posts its arguments.
const (
	DefaultCommandDir = "."
	DefaultHTTPMethod = "POST"
)

// DefaultCircuitBreaker is a circuit_breaker block with its attributes left
// out, and the breaker of a tool (or an MCP server) without the block:
// every tool has one unless it turns it off, so a tool that keeps failing
// stops being called after three failures in a row, for a minute.
func DefaultCircuitBreaker() CircuitBreaker {
	return CircuitBreaker{FailureThreshold: 3, RecoveryTimeout: Duration(time.Minute), HalfOpenMaxCalls: 1}
}

// DefaultMCPServerTimeout bounds connecting to an MCP server and listing its
// tools, and each call of its tools: a tool call's default.
const DefaultMCPServerTimeout = DefaultToolTimeout

// DefaultMCPServer is an mcp_server block with its optional attributes left
// out: a server's tools are assumed to write unless the block says less.
func DefaultMCPServer() MCPServer {
	cb := DefaultCircuitBreaker()
	return MCPServer{Effect: DefaultEffect, Timeout: DefaultMCPServerTimeout, CircuitBreaker: &cb, OnDrift: DefaultOnDrift}
}

// What a run does when a server or tool differs from the lock file: by
// default it refuses to start (or, mid-run, to go on), so a tool that
// changed what it says it is never reaches the model unreviewed.
const (
	DefaultOnDrift  = OnDriftRefuse
	OnDriftRefuse   = "refuse"
	OnDriftHideTool = "hide_tool"
	OnDriftWarn     = "warn"
)

// LockFileName is the lock file of a configuration that is a directory;
// the lock file of a single-file configuration NAME.hcl is NAME.lock.hcl
// beside it (see LockFilePath).
const LockFileName = "symbi.lock.hcl"

// LockFileSuffix ends every lock file's name: a directory's configuration
// is every *.hcl in it but these.
const LockFileSuffix = ".lock.hcl"

// A policy's mode: enforced (the default, written as no mode in a plan), or
// in shadow, where its decisions are journalled and never enforced.
const (
	PolicyModeEnforce = "enforce"
	PolicyModeShadow  = "shadow"
)

// DefaultOPAQuery is the query of an opa policy that names none.
const DefaultOPAQuery = "data.symbi.gate.decision"

// DefaultBudget is what an agent without a budget gets, and what a budget
// block's attributes left out take. Zero means unlimited.
func DefaultBudget() Budget {
	return Budget{
		MaxIterations:                25,
		MaxTotalTokens:               100000,
		Timeout:                      Duration(5 * time.Minute),
		EstimatedOutputTokensPerCall: 512,
	}
}

// DefaultRetryStrategy is a recovery's retry block with its attributes left
// out. On lists the failure kinds a second try can fix; the toolbox uses it
// too for a retry whose list is empty.
func DefaultRetryStrategy() RetryStrategy {
	return RetryStrategy{
		MaxAttempts:    3,
		InitialBackoff: Duration(200 * time.Millisecond),
		MaxBackoff:     Duration(5 * time.Second),
		Multiplier:     2,
		Jitter:         0.2,
		On:             []string{"rate_limited", "timeout", "transport"},
	}
}

// DefaultCachedResultStrategy is a cached_result block with its attribute
// left out.
func DefaultCachedResultStrategy() CachedResultStrategy {
	return CachedResultStrategy{MaxStaleness: Duration(10 * time.Minute)}
}

// DefaultLLMRecoveryStrategy is an llm_recovery block with its attribute
// left out.
func DefaultLLMRecoveryStrategy() LLMRecoveryStrategy {
	return LLMRecoveryStrategy{MaxAttempts: 1}
}

// DefaultEscalateStrategy is an escalate block with its attributes left out.
func DefaultEscalateStrategy() EscalateStrategy {
	return EscalateStrategy{Queue: "default", Timeout: Duration(10 * time.Minute)}
}

// DefaultDeadLetterPath is the dead-letter file, relative to state_dir, of a
// dead_letter block without a path.
const DefaultDeadLetterPath = "dead_letter.jsonl"

// DefaultKnowledgePath is the store of a knowledge block without a path:
// one file per store inside the state directory.
func DefaultKnowledgePath(stateDir, name string) string {
	return path.Join(stateDir, "knowledge", name+".db")
}

// DefaultOnNoPolicy decides a tool call or delegation that no policy
// addresses: denied, so an agent fails closed.
const DefaultOnNoPolicy = "deny"

// DefaultLoop is an agent's loop settings before its own attributes are
// read: what profile selects (ProfileMode), or without a profile the react
// loop for an agent that can act (hasTools: tools, delegates or the
// terminate tool) and a plain answer for one that cannot.
func DefaultLoop(profile string, hasTools bool) Loop {
	l := Loop{
		Mode:               "simple",
		Profile:            profile,
		ToolTimeout:        DefaultToolTimeout,
		MaxConcurrentTools: 5,
		MaxOutputTokens:    4096,
		ToolChoice:         "auto",
		OnNoPolicy:         DefaultOnNoPolicy,
		MaxDelegationDepth: 3,
	}
	if hasTools {
		l.Mode = "react"
	}
	if mode, ok := ProfileMode(profile); ok {
		l.Mode = mode
	}
	switch profile {
	case "simple_answer":
		l.MaxOutputTokens, l.ToolChoice = 1024, "none"
	case "complex_analysis":
		l.MaxOutputTokens = 8192
	case "auto":
		// The engine picks a profile per input (and its mode, by
		// ProfileMode); react is the starting point because it degrades to
		// a plain answer when no tool is wanted.
		l.Mode = "react"
	}
	return l
}

// ProfileMode returns the loop mode a task profile selects, as Wuwe's
// select_policy does, and whether profile is one that selects a mode ("auto"
// does not: the engine picks a profile per input).
func ProfileMode(profile string) (string, bool) {
	switch profile {
	case "simple_answer":
		return "simple", true
	case "tool_required", "complex_analysis":
		return "react", true
	case "high_confidence_answer":
		return "reflect_and_retry", true
	case "plan_required":
		return "plan_execute", true
	}
	return "", false
}

// DefaultContextSettings is an agent's context block with its attributes
// left out (and an agent without one).
func DefaultContextSettings() ContextSettings {
	return ContextSettings{Strategy: "sliding_window", TokenBudget: 32000, Recent: 6}
}

// DefaultReflect is a reflect block's thresholds with its attributes left
// out; the engine uses them for a reflect_and_retry agent of a plan made
// without a reflect block.
func DefaultReflect() Reflect {
	return Reflect{MaxAttempts: 2, PassScore: 0.75, ReviseScore: 0.55, RetryScore: 0.35}
}

// DefaultCriterionWeight is a rubric criterion's weight when it sets none.
const DefaultCriterionWeight = 1

// DefaultPlanSettings is an agent's plan block with its attributes left out
// (and an agent without one).
func DefaultPlanSettings() PlanSettings {
	return PlanSettings{MaxSteps: 8, MaxParallelSteps: 2, StepTimeout: Duration(time.Minute), AllowReplanning: true}
}

// DefaultAgentKnowledge is an agent's knowledge block with its optional
// attributes left out (Store is required).
func DefaultAgentKnowledge() AgentKnowledge {
	return AgentKnowledge{MaxContextItems: 5, RelevanceThreshold: 0.3}
}

// DefaultProgress is an agent's progress block with its attributes left out
// (and an agent without one).
func DefaultProgress() Progress {
	return Progress{MaxReattemptsPerStep: 2, SimilarityThreshold: 0.85, OnLimit: "abort"}
}

// DefaultPreHydrate is an agent's pre_hydrate block with its limits left
// out.
func DefaultPreHydrate() PreHydrate {
	return PreHydrate{MaxReferences: 10, MaxContextTokens: 4000, Timeout: Duration(15 * time.Second)}
}

// DefaultBestOfN is a best_of_n block with its optional attributes left out.
// MaxConcurrency is zero here: it defaults to Candidates, whatever that is.
// Estimate.ScorerModelCallsPerCandidate becomes 1 with a judge scorer.
func DefaultBestOfN() BestOfN {
	return BestOfN{
		Candidates:   3,
		Timeout:      Duration(5 * time.Minute),
		TieTolerance: 1e-9,
		SideEffects:  "isolate",
		Estimate:     Estimate{ModelCallsPerCandidate: 1},
		Selector:     Selector{Kind: "highest_score"},
	}
}

// DefaultSelectorTimeout bounds one run of a command selector that sets no
// timeout: a tool call's default (the agent's loop.tool_timeout bounds it
// too). Its effect defaults to DefaultEffect, as a tool's does.
const DefaultSelectorTimeout = DefaultToolTimeout

// DefaultScorerTimeout bounds one run of a command scorer that sets no
// timeout (the agent's loop.tool_timeout bounds it too). Its effect
// defaults to DefaultEffect, as a tool's does.
const DefaultScorerTimeout = Duration(60 * time.Second)

// DefaultVoteKey is the key of a majority_vote selector that sets none:
// answers that differ only in surrounding space agree.
const DefaultVoteKey = "trimspace(candidate.content)"
