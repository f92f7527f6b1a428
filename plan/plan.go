package plan

import (
	"encoding/json"
)

// FormatVersion is the version of the plan's JSON form. It changes whenever a
// field changes meaning or a required field is added.
const FormatVersion = 1

// Plan is one compiled configuration. Every list is sorted by address, so the
// JSON form does not depend on the order of files or blocks.
type Plan struct {
	FormatVersion int    `json:"format_version"`
	SourceHash    string `json:"source_hash"` // sha256 over the configuration files, in path order

	Settings     Settings      `json:"settings"`
	Variables    []Variable    `json:"variables,omitempty"`
	Models       []Model       `json:"models,omitempty"`
	Routers      []Router      `json:"routers,omitempty"`
	Tools        []Tool        `json:"tools,omitempty"`
	MCPServers   []MCPServer   `json:"mcp_servers,omitempty"`
	ToolProfiles []ToolProfile `json:"tool_profiles,omitempty"`
	Policies     []Policy      `json:"policies,omitempty"`
	PolicyTests  []PolicyTest  `json:"policy_tests,omitempty"`
	Budgets      []Budget      `json:"budgets,omitempty"`
	Recoveries   []Recovery    `json:"recoveries,omitempty"`
	Knowledge    []Knowledge   `json:"knowledge,omitempty"`
	Agents       []Agent       `json:"agents,omitempty"`
	BestOfN      []BestOfN     `json:"best_of_n,omitempty"`

	// Files lists every file the compiler read (configuration, prompts,
	// policies, scripts, schemas), relative to the configuration directory.
	Files []FileRef `json:"files,omitempty"`

	// Lock is what the configuration's lock file pins; nil without one.
	Lock *Lock `json:"lock,omitempty"`
}

// Settings come from the `symbi` block.
type Settings struct {
	RequiredVersion string `json:"required_version,omitempty"`
	StateDir        string `json:"state_dir"`    // default ".symbi"
	JournalSync     string `json:"journal_sync"` // background | always
	// Workspace is the root of the read_file, list_dir and write_file
	// builtins, relative to the configuration directory (default "."). Empty
	// in plans made before it existed: the configuration directory.
	Workspace string `json:"workspace,omitempty"`
	// Telemetry is the telemetry block: OpenTelemetry traces and metrics.
	// Nil without one; the OTEL_* environment variables may still turn
	// them on (docs/telemetry.md).
	Telemetry *Telemetry `json:"telemetry,omitempty"`
	// DecisionLog is the decision_log block: every gate decision, one line
	// each, in OPA's decision-log format. Nil without one.
	DecisionLog *DecisionLog `json:"decision_log,omitempty"`
	// OnDrift is what a run does when a tool differs from the lock file
	// (refuse, hide_tool or warn), for the mcp_server blocks that do not
	// say and for command tools; empty: DefaultOnDrift.
	OnDrift string `json:"on_drift,omitempty"`
	// Temporal is the settings' temporal block: with it, `symbi run` starts
	// runs on Temporal (docs/temporal.md). Nil without the block.
	Temporal *TemporalSettings `json:"temporal,omitempty"`
}

// Telemetry is the `telemetry` block of the `symbi` block: the settings an
// OpenTelemetry SDK reads from OTEL_* variables, which win over these.
type Telemetry struct {
	// Endpoint is the OTLP collector's base URL; "" is the exporter's
	// default (localhost:4318 over http/protobuf, localhost:4317 over grpc).
	Endpoint string `json:"endpoint,omitempty"`
	Protocol string `json:"protocol"` // grpc | http/protobuf
	// Headers are sent with every export; values may call env().
	Headers         map[string]String `json:"headers,omitempty"`
	ServiceName     string            `json:"service_name"`
	TracesExporter  string            `json:"traces_exporter"`  // otlp | console | none
	MetricsExporter string            `json:"metrics_exporter"` // otlp | console | none
	// Sampler is an OTEL_TRACES_SAMPLER value; SamplerArg its ratio, for
	// the traceidratio samplers.
	Sampler    string   `json:"sampler"`
	SamplerArg *float64 `json:"sampler_arg,omitempty"`
	// CaptureContent records prompts, completions, tool arguments and
	// results on the spans, after the secret redactor.
	CaptureContent bool `json:"capture_content"`
	// OnFailure is what an exporter that cannot be set up does to a run:
	// ignore (the run goes on, untraced) or fail (it does not start).
	OnFailure string `json:"on_failure"`
}

// DecisionLog is the `decision_log` block of the `symbi` block.
type DecisionLog struct {
	// Path is the file decisions are appended to, relative to the
	// configuration directory.
	Path string `json:"path"`
}

// TemporalSettings say where runs on Temporal go. Flags win over the
// environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE), which wins over these.
type TemporalSettings struct {
	Address   string `json:"address,omitempty"`   // host:port; none: the environment's, else localhost:7233
	Namespace string `json:"namespace,omitempty"` // none: the environment's, else default
	TaskQueue string `json:"task_queue"`          // default DefaultTaskQueue
}

// Variable is a declared input variable with its resolved value.
type Variable struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"` // type expression as written, e.g. "string", "list(number)"
	Description string          `json:"description,omitempty"`
	Sensitive   bool            `json:"sensitive,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"` // omitted when Sensitive
	Range       Range           `json:"range"`
}

// Model is a `model` block.
type Model struct {
	Address       string         `json:"address"`  // "model.fast"
	Provider      string         `json:"provider"` // openai | anthropic | scripted
	Name          string         `json:"name,omitempty"`
	BaseURL       String         `json:"base_url,omitempty"`
	APIKeyEnv     string         `json:"api_key_env,omitempty"` // the variable's name, never its value
	Capabilities  []string       `json:"capabilities,omitempty"`
	ContextWindow int            `json:"context_window"`
	Quality       float64        `json:"quality"`
	Latency       float64        `json:"latency"`
	Pricing       *Pricing       `json:"pricing,omitempty"`
	Timeouts      ModelTimeouts  `json:"timeouts"`
	Retry         TransportRetry `json:"retry"`
	// MaxResponseBytes bounds one response: its content, reasoning and
	// tool calls together. Zero (a plan made before it existed) means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64 `json:"max_response_bytes"`
	// Anthropic only: the max_tokens sent when a request sets no output
	// limit (the API requires one), extended thinking (off, enabled with
	// ThinkingBudgetTokens, adaptive) and the prompt cache's breakpoint
	// (none, 5m, 1h).
	MaxTokens            int      `json:"max_tokens,omitempty"`
	Thinking             string   `json:"thinking,omitempty"`
	ThinkingBudgetTokens int      `json:"thinking_budget_tokens,omitempty"`
	PromptCache          string   `json:"prompt_cache,omitempty"`
	Script               *FileRef `json:"script,omitempty"` // scripted provider only
	Range                Range    `json:"range"`
}

// Pricing is USD per million tokens. Prompt tokens read from or written to
// the provider's prompt cache are priced apart when their price is set, and
// as input tokens when it is not.
type Pricing struct {
	InputUSDPerMTok      float64  `json:"input_usd_per_mtok"`
	OutputUSDPerMTok     float64  `json:"output_usd_per_mtok"`
	CacheReadUSDPerMTok  *float64 `json:"cache_read_usd_per_mtok,omitempty"`
	CacheWriteUSDPerMTok *float64 `json:"cache_write_usd_per_mtok,omitempty"`
}

// ModelTimeouts are the four stream timeouts. Zero means none.
type ModelTimeouts struct {
	Total      Duration `json:"total"`
	Connect    Duration `json:"connect"`
	FirstEvent Duration `json:"first_event"`
	Idle       Duration `json:"idle"`
}

// TransportRetry retries a model call on 429 (honouring Retry-After), 5xx and
// connection resets.
type TransportRetry struct {
	MaxAttempts int      `json:"max_attempts"`
	Backoff     Duration `json:"backoff"`
	MaxBackoff  Duration `json:"max_backoff"`
	Jitter      float64  `json:"jitter"`
}

// Router is a `router` block: it picks a model before every model call.
type Router struct {
	Address        string   `json:"address"`
	Strategy       string   `json:"strategy"` // balanced | lowest_cost | highest_quality | lowest_latency
	Models         []string `json:"models"`   // model addresses
	Prefer         string   `json:"prefer,omitempty"`
	Require        []string `json:"require,omitempty"`
	MinimumQuality float64  `json:"minimum_quality"`
	Range          Range    `json:"range"`
}

// Tool is a `tool` block.
type Tool struct {
	Address        string          `json:"address"` // "tool.web_search"
	Description    string          `json:"description"`
	Parameters     json.RawMessage `json:"parameters,omitempty"` // JSON Schema, canonical JSON
	Executor       Executor        `json:"executor"`
	Effect         string          `json:"effect"` // none | read | write | destructive
	Idempotent     bool            `json:"idempotent"`
	Approval       string          `json:"approval"`  // never | policy | always
	OnResume       string          `json:"on_resume"` // retry | ask | report: a call dispatched but without a result when the run resumes
	Timeout        Duration        `json:"timeout"`
	MaxOutputBytes int             `json:"max_output_bytes"`
	Tags           []string        `json:"tags,omitempty"`
	CircuitBreaker *CircuitBreaker `json:"circuit_breaker,omitempty"`
	Recovery       string          `json:"recovery,omitempty"` // recovery address
	// AllowHosts are the hosts an http_get builtin may fetch: names or
	// path.Match globs ("*.example.com"), optionally with ":port".
	AllowHosts []string `json:"allow_hosts,omitempty"`
	Range      Range    `json:"range"`
}

// Executor says how a tool runs. Exactly one of the pointers is set, matching Kind.
type Executor struct {
	Kind    string       `json:"kind"` // builtin | command | http | mcp | fixed
	Builtin string       `json:"builtin,omitempty"`
	Command *CommandExec `json:"command,omitempty"`
	HTTP    *HTTPExec    `json:"http,omitempty"`
	MCP     *MCPExec     `json:"mcp,omitempty"`
	Fixed   *FixedExec   `json:"fixed,omitempty"`
}

// FixedExec answers every call with the same output, or fails every call
// with the same error: a test's override_tool (symbi test), so that a run
// under test causes no side effect while its policies decide as ever. The
// compiler never makes one; a plan that has one says so in its saved
// plan.json, which a resume runs.
type FixedExec struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// CommandExec runs a process: arguments as JSON on stdin, result on stdout.
type CommandExec struct {
	Argv []String          `json:"argv"`
	Dir  string            `json:"dir,omitempty"` // relative to the configuration directory
	Env  map[string]String `json:"env,omitempty"`
}

// HTTPExec sends the arguments as a JSON body.
type HTTPExec struct {
	URL     String            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]String `json:"headers,omitempty"`
}

// MCPExec names one tool of an MCP server.
type MCPExec struct {
	Server string `json:"server"` // mcp_server address
	Tool   string `json:"tool"`
}

// CircuitBreaker settings for one tool (for an MCP server, for each of its
// tools). Every tool has a breaker unless its block turns it off
// (`enabled = false`): Disabled then, and nothing else is set. A nil
// *CircuitBreaker, in a plan made without the compiler, is the default
// breaker (DefaultCircuitBreaker).
type CircuitBreaker struct {
	Disabled         bool     `json:"disabled,omitempty"`
	FailureThreshold int      `json:"failure_threshold,omitempty"`
	RecoveryTimeout  Duration `json:"recovery_timeout,omitempty"`
	HalfOpenMaxCalls int      `json:"half_open_max_calls,omitempty"`
}

// MCPServer is an `mcp_server` block. Exactly one of Command and URL is set.
type MCPServer struct {
	Address string            `json:"address"`
	Command []String          `json:"command,omitempty"`
	URL     String            `json:"url,omitempty"`
	Env     map[string]String `json:"env,omitempty"`
	Effect  string            `json:"effect"`
	Timeout Duration          `json:"timeout"`
	// CircuitBreaker is each of the server's tools' breaker: every tool
	// has one of its own, with these settings.
	CircuitBreaker *CircuitBreaker `json:"circuit_breaker,omitempty"`
	// OnDrift is what a run does when the server or one of its tools
	// differs from the lock file: refuse, hide_tool or warn. Empty (a plan
	// made before it existed): DefaultOnDrift.
	OnDrift string `json:"on_drift,omitempty"`
	Range   Range  `json:"range"`
}

// ToolProfile filters an agent's tools by name.
type ToolProfile struct {
	Address  string   `json:"address"`
	Include  []string `json:"include,omitempty"`
	Exclude  []string `json:"exclude,omitempty"`
	MaxTools int      `json:"max_tools"` // 0 = unlimited
	Range    Range    `json:"range"`
}

// Policy is a `policy` block. Exactly one of Rules, OPA and Cedar is set, matching Kind.
type Policy struct {
	Address string       `json:"address"`
	Kind    string       `json:"kind"` // rules | opa | cedar
	Rules   *RulesPolicy `json:"rules,omitempty"`
	OPA     *OPAPolicy   `json:"opa,omitempty"`
	Cedar   *CedarPolicy `json:"cedar,omitempty"`
	// Mode is "shadow" for a policy that is evaluated on every action and
	// journalled but never enforced; empty: enforced (PolicyModeEnforce).
	Mode  string `json:"mode,omitempty"`
	Range Range  `json:"range"`
}

// RulesPolicy holds the built-in rules: patterns "tool" or "tool:arg=glob".
type RulesPolicy struct {
	Deny  []string `json:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Allow []string `json:"allow,omitempty"`
}

// OPAPolicy is a set of Rego v1 modules with optional data and a query.
type OPAPolicy struct {
	Modules []FileRef `json:"modules"`
	Data    *FileRef  `json:"data,omitempty"`
	Query   string    `json:"query"`
}

// CedarPolicy is a Cedar policy set with optional entities and schema.
type CedarPolicy struct {
	Policies []FileRef `json:"policies"`
	Entities *FileRef  `json:"entities,omitempty"`
	Schema   *FileRef  `json:"schema,omitempty"`
}

// PolicyTest is a `policy_test` block.
type PolicyTest struct {
	Address string          `json:"address"`
	Policy  string          `json:"policy"`
	Agent   string          `json:"agent,omitempty"`
	Action  json.RawMessage `json:"action"` // canonical JSON of the action object
	Expect  string          `json:"expect"` // allow | deny | modify | ask | not_applicable
	Reason  string          `json:"reason,omitempty"`
	Range   Range           `json:"range"`
}

// Budget is a `budget` block with every default filled. Zero means unlimited.
type Budget struct {
	Address                      string   `json:"address"`
	MaxIterations                int64    `json:"max_iterations"`
	MaxModelCalls                int64    `json:"max_model_calls"`
	MaxToolCalls                 int64    `json:"max_tool_calls"`
	MaxToolRounds                int64    `json:"max_tool_rounds"`
	MaxReflectionAttempts        int64    `json:"max_reflection_attempts"`
	MaxPlanSteps                 int64    `json:"max_plan_steps"`
	MaxPromptTokens              int64    `json:"max_prompt_tokens"`
	MaxCompletionTokens          int64    `json:"max_completion_tokens"`
	MaxTotalTokens               int64    `json:"max_total_tokens"`
	MaxCostUSD                   float64  `json:"max_cost_usd"`
	Timeout                      Duration `json:"timeout"`
	EstimatedOutputTokensPerCall int64    `json:"estimated_output_tokens_per_call"`
	Range                        Range    `json:"range"`
}

// Recovery is a `recovery` block: strategies tried in the order written.
type Recovery struct {
	Address    string             `json:"address"`
	Strategies []RecoveryStrategy `json:"strategies"`
	Range      Range              `json:"range"`
}

// RecoveryStrategy is one step of a recovery chain. Exactly one pointer is set, matching Kind.
type RecoveryStrategy struct {
	Kind         string                `json:"kind"` // retry | fallback | cached_result | llm_recovery | escalate | dead_letter
	Retry        *RetryStrategy        `json:"retry,omitempty"`
	Fallback     *FallbackStrategy     `json:"fallback,omitempty"`
	CachedResult *CachedResultStrategy `json:"cached_result,omitempty"`
	LLMRecovery  *LLMRecoveryStrategy  `json:"llm_recovery,omitempty"`
	Escalate     *EscalateStrategy     `json:"escalate,omitempty"`
	DeadLetter   *DeadLetterStrategy   `json:"dead_letter,omitempty"`
}

type RetryStrategy struct {
	MaxAttempts    int      `json:"max_attempts"`
	InitialBackoff Duration `json:"initial_backoff"`
	MaxBackoff     Duration `json:"max_backoff"`
	Multiplier     float64  `json:"multiplier"`
	Jitter         float64  `json:"jitter"`
	On             []string `json:"on"` // failure kinds: timeout | transport | rate_limited | invalid_arguments | error | circuit_open
}

type FallbackStrategy struct {
	Tools []string `json:"tools"` // tool addresses
}

type CachedResultStrategy struct {
	MaxStaleness Duration `json:"max_staleness"`
}

type LLMRecoveryStrategy struct {
	MaxAttempts int `json:"max_attempts"`
}

type EscalateStrategy struct {
	Queue   string   `json:"queue"`
	Timeout Duration `json:"timeout"`
}

type DeadLetterStrategy struct {
	Path string `json:"path,omitempty"` // relative to state_dir; default "dead_letter.jsonl"
}

// Knowledge is a `knowledge` block: an embedded fact store.
type Knowledge struct {
	Address     string `json:"address"`
	Path        string `json:"path"`
	Conventions string `json:"conventions,omitempty"`
	Range       Range  `json:"range"`
}

// Agent is an `agent` block.
type Agent struct {
	Address     string   `json:"address"`
	Description string   `json:"description,omitempty"`
	Model       string   `json:"model"` // model or router address
	System      string   `json:"system,omitempty"`
	Tools       []string `json:"tools,omitempty"` // tool and mcp_server addresses, as written
	// EffectiveTools is the tool addresses left after the profile (configured
	// tools only: an MCP server's tools are known only at run time).
	EffectiveTools []string `json:"effective_tools,omitempty"`
	ToolProfile    string   `json:"tool_profile,omitempty"`
	Policies       []string `json:"policies,omitempty"`
	Budget         string   `json:"budget,omitempty"` // empty: DefaultBudget
	Delegates      []string `json:"delegates,omitempty"`

	Loop       Loop            `json:"loop"`
	Context    ContextSettings `json:"context"`
	Reflect    *Reflect        `json:"reflect,omitempty"`
	Plan       PlanSettings    `json:"plan"`
	Knowledge  *AgentKnowledge `json:"knowledge,omitempty"`
	Progress   Progress        `json:"progress"`
	PreHydrate *PreHydrate     `json:"pre_hydrate,omitempty"`
	Range      Range           `json:"range"`
}

// Loop holds the loop settings after the profile filled its defaults.
type Loop struct {
	Mode               string   `json:"mode"`    // simple | react | reflect_and_retry | plan_execute
	Profile            string   `json:"profile"` // as written; "auto" selects per input at run time
	ToolTimeout        Duration `json:"tool_timeout"`
	MaxConcurrentTools int      `json:"max_concurrent_tools"`
	Temperature        *float64 `json:"temperature,omitempty"`
	MaxOutputTokens    int      `json:"max_output_tokens"`
	ToolChoice         string   `json:"tool_choice"` // auto | required | none | a tool name
	Recovery           string   `json:"recovery,omitempty"`
	OnNoPolicy         string   `json:"on_no_policy"` // deny | allow
	MaxDelegationDepth int      `json:"max_delegation_depth"`
	// AllowTerminate offers the model a terminate tool: it may end the run
	// without an answer, giving a reason, when its policies allow it.
	AllowTerminate bool `json:"allow_terminate,omitempty"`
}

// ContextSettings fit the conversation to a token budget before every model call.
type ContextSettings struct {
	Strategy    string `json:"strategy"` // sliding_window | observation_masking | anchored_summary
	TokenBudget int    `json:"token_budget"`
	Recent      int    `json:"recent"`
}

// Reflect configures reflect_and_retry.
type Reflect struct {
	Evaluator   string      `json:"evaluator,omitempty"` // agent address; empty: the rubric
	MaxAttempts int         `json:"max_attempts"`
	PassScore   float64     `json:"pass_score"`
	ReviseScore float64     `json:"revise_score"`
	RetryScore  float64     `json:"retry_score"`
	Rubric      []Criterion `json:"rubric,omitempty"`
}

type Criterion struct {
	Name        string  `json:"name"`
	Weight      float64 `json:"weight"`
	Description string  `json:"description,omitempty"`
}

// PlanSettings configure plan_execute.
type PlanSettings struct {
	MaxSteps                 int      `json:"max_steps"`
	MaxParallelSteps         int      `json:"max_parallel_steps"`
	StepTimeout              Duration `json:"step_timeout"`
	AllowReplanning          bool     `json:"allow_replanning"`
	ContinueAfterStepFailure bool     `json:"continue_after_step_failure"`
}

type AgentKnowledge struct {
	Store              string  `json:"store"` // knowledge address
	MaxContextItems    int     `json:"max_context_items"`
	RelevanceThreshold float64 `json:"relevance_threshold"`
	AutoPersist        bool    `json:"auto_persist"`
}

type Progress struct {
	MaxReattemptsPerStep int     `json:"max_reattempts_per_step"`
	SimilarityThreshold  float64 `json:"similarity_threshold"`
	OnLimit              string  `json:"on_limit"` // skip | abort | escalate
}

type PreHydrate struct {
	Resolvers        map[string]string `json:"resolvers,omitempty"` // reference kind (url, file, or a pattern name) -> tool address
	Patterns         map[string]string `json:"patterns,omitempty"`  // name -> regular expression
	MaxReferences    int               `json:"max_references"`
	MaxContextTokens int               `json:"max_context_tokens"`
	Timeout          Duration          `json:"timeout"`
}

// BestOfN is a `best_of_n` block.
type BestOfN struct {
	Address        string          `json:"address"`
	Agent          string          `json:"agent"`
	Candidates     int             `json:"candidates"`
	MaxConcurrency int             `json:"max_concurrency"`
	Timeout        Duration        `json:"timeout"`
	MinimumScore   float64         `json:"minimum_score"`
	TieTolerance   float64         `json:"tie_tolerance"`
	SideEffects    string          `json:"side_effects"` // isolate | read_only | allow
	Budget         string          `json:"budget,omitempty"`
	Vary           map[string]Expr `json:"vary,omitempty"` // request field -> deferred expression over candidate.index
	Estimate       Estimate        `json:"estimate"`
	Scorer         Scorer          `json:"scorer"`
	Selector       Selector        `json:"selector"`
	Range          Range           `json:"range"`
}

// Estimate is what one candidate's generation, and its scoring, are
// expected to use: the best-of-N budget preflight multiplies it by the
// candidates, and each stage reserves its part before it starts.
type Estimate struct {
	ModelCallsPerCandidate        int64   `json:"model_calls_per_candidate"`
	TotalTokensPerCandidate       int64   `json:"total_tokens_per_candidate"`
	CostUSDPerCandidate           float64 `json:"cost_usd_per_candidate"`
	ScorerModelCallsPerCandidate  int64   `json:"scorer_model_calls_per_candidate"`
	ScorerTotalTokensPerCandidate int64   `json:"scorer_total_tokens_per_candidate"`
	ScorerCostUSDPerCandidate     float64 `json:"scorer_cost_usd_per_candidate"`
}

// Scorer scores one candidate. Exactly one of Judge, Expr and Command is set, matching Kind.
// A command scorer is a process, given the candidate as JSON on stdin, that
// prints its score; it runs as a tool call named after the block with
// ".scorer" ("best_of_n.answer.scorer"), with Effect, gated by the agent's
// policies (docs/reasoning.md#scorers).
type Scorer struct {
	Kind    string       `json:"kind"`            // judge | expr | command
	Judge   string       `json:"judge,omitempty"` // agent address
	Expr    *Expr        `json:"expr,omitempty"`
	Command *CommandExec `json:"command,omitempty"`
	Effect  string       `json:"effect,omitempty"`  // a command scorer's: none | read | write | destructive
	Timeout Duration     `json:"timeout,omitempty"` // a command scorer's
}

// Selector picks the candidate from the eligible ones. A command selector
// (Kind "command") is a process, given the candidates as JSON on stdin,
// that prints the chosen index; it runs as a tool call named after the
// block (its address, "best_of_n.answer"), with Effect, gated by the
// agent's policies (docs/reasoning.md#selection).
type Selector struct {
	Kind    string       `json:"kind"` // highest_score | majority_vote | command
	Key     *Expr        `json:"key,omitempty"`
	Command *CommandExec `json:"command,omitempty"`
	Effect  string       `json:"effect,omitempty"`  // a command selector's: none | read | write | destructive
	Timeout Duration     `json:"timeout,omitempty"` // a command selector's
}
