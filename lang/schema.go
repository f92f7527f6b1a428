package lang

import "github.com/hashicorp/hcl/v2"

// Schema describes one block type: its attributes and nested block types.
// The tables below are the language's grammar; interp reads the attributes
// by the same names.
type Schema struct {
	Labels []string           // label names; top-level blocks have "name"
	Attrs  []string           // all optional here; interp reports missing required ones
	Blocks map[string]*Schema // nested block types
	Multi  map[string]bool    // nested types that may repeat
	Open   bool               // any attributes, no blocks (locals, vary)

	bodySchema *hcl.BodySchema // body's answer, built on first use
}

// body is the schema in hcl's terms. It is built once per Schema: a
// configuration decodes thousands of blocks against the same few schemas.
// A Schema is used by one Parse at a time (TopLevel returns new ones).
func (s *Schema) body() *hcl.BodySchema {
	if s.bodySchema == nil {
		s.bodySchema = s.buildBody()
	}
	return s.bodySchema
}

func (s *Schema) buildBody() *hcl.BodySchema {
	bs := &hcl.BodySchema{}
	for _, a := range s.Attrs {
		bs.Attributes = append(bs.Attributes, hcl.AttributeSchema{Name: a})
	}
	for name, nested := range s.Blocks {
		bs.Blocks = append(bs.Blocks, hcl.BlockHeaderSchema{Type: name, LabelNames: nested.Labels})
	}
	return bs
}

var named = []string{"name"}

func timeoutsSchema() *Schema {
	return &Schema{Attrs: []string{"total", "connect", "first_event", "idle"}}
}

func circuitBreakerSchema() *Schema {
	return &Schema{Attrs: []string{"enabled", "failure_threshold", "recovery_timeout", "half_open_max_calls"}}
}

func commandSchema() *Schema { return &Schema{Attrs: []string{"argv", "dir", "env"}} }

// TopLevel lists every top-level block type and its schema.
func TopLevel() map[string]*Schema {
	return map[string]*Schema{
		"symbi": {Attrs: []string{"required_version", "state_dir", "journal_sync", "workspace", "on_drift"},
			Blocks: map[string]*Schema{
				"telemetry": {Attrs: []string{"endpoint", "protocol", "headers", "service_name", "traces_exporter", "metrics_exporter",
					"sampler", "sampler_arg", "capture_content", "on_failure"}},
				"decision_log": {Attrs: []string{"path"}},
				"temporal":     {Attrs: []string{"address", "namespace", "task_queue"}},
			}},
		"variable": {Labels: named, Attrs: []string{"type", "default", "description", "sensitive"}},
		"locals":   {Open: true},
		"model": {Labels: named,
			Attrs: []string{"provider", "name", "base_url", "api_key_env", "capabilities", "context_window", "quality", "latency", "script", "max_response_bytes",
				"max_tokens", "thinking", "thinking_budget_tokens", "prompt_cache"},
			Blocks: map[string]*Schema{
				"pricing":  {Attrs: []string{"input_usd_per_mtok", "output_usd_per_mtok", "cache_read_usd_per_mtok", "cache_write_usd_per_mtok"}},
				"timeouts": timeoutsSchema(),
				"retry":    {Attrs: []string{"max_attempts", "backoff", "max_backoff", "jitter"}},
			}},
		"router": {Labels: named, Attrs: []string{"strategy", "models", "prefer", "require", "minimum_quality"}},
		"tool": {Labels: named,
			Attrs: []string{"description", "parameters", "builtin", "effect", "idempotent", "approval", "timeout", "max_output_bytes", "tags", "recovery", "allow_hosts", "on_resume"},
			Blocks: map[string]*Schema{
				"command":         commandSchema(),
				"http":            {Attrs: []string{"url", "method", "headers"}},
				"mcp":             {Attrs: []string{"server", "tool"}},
				"circuit_breaker": circuitBreakerSchema(),
			}},
		"mcp_server": {Labels: named, Attrs: []string{"command", "url", "env", "effect", "timeout", "on_drift"},
			Blocks: map[string]*Schema{"circuit_breaker": circuitBreakerSchema()}},
		"tool_profile": {Labels: named, Attrs: []string{"include", "exclude", "max_tools"}},
		"policy": {Labels: named, Attrs: []string{"mode"}, Blocks: map[string]*Schema{
			"rules": {Attrs: []string{"deny", "ask", "allow"}},
			"opa":   {Attrs: []string{"modules", "data", "query"}},
			"cedar": {Attrs: []string{"policies", "entities", "schema"}},
		}},
		"policy_test": {Labels: named, Attrs: []string{"policy", "agent", "action", "expect", "reason"}},
		"budget": {Labels: named, Attrs: []string{
			"max_iterations", "max_model_calls", "max_tool_calls", "max_tool_rounds", "max_reflection_attempts",
			"max_plan_steps", "max_prompt_tokens", "max_completion_tokens", "max_total_tokens", "max_cost_usd",
			"timeout", "estimated_output_tokens_per_call"}},
		"recovery": {Labels: named, Multi: map[string]bool{
			"retry": true, "fallback": true, "cached_result": true, "llm_recovery": true, "escalate": true, "dead_letter": true,
		}, Blocks: map[string]*Schema{
			"retry":         {Attrs: []string{"max_attempts", "initial_backoff", "max_backoff", "multiplier", "jitter", "on"}},
			"fallback":      {Attrs: []string{"tools"}},
			"cached_result": {Attrs: []string{"max_staleness"}},
			"llm_recovery":  {Attrs: []string{"max_attempts"}},
			"escalate":      {Attrs: []string{"queue", "timeout"}},
			"dead_letter":   {Attrs: []string{"path"}},
		}},
		"knowledge": {Labels: named, Attrs: []string{"path", "conventions"}},
		"agent": {Labels: named,
			Attrs: []string{"description", "model", "system", "tools", "tool_profile", "policies", "budget", "delegates"},
			Blocks: map[string]*Schema{
				"loop": {Attrs: []string{"mode", "profile", "tool_timeout", "max_concurrent_tools", "temperature",
					"max_output_tokens", "tool_choice", "recovery", "on_no_policy", "max_delegation_depth", "allow_terminate"}},
				"context": {Attrs: []string{"strategy", "token_budget", "recent"}},
				"reflect": {Attrs: []string{"evaluator", "max_attempts", "pass_score", "revise_score", "retry_score"},
					Blocks: map[string]*Schema{"rubric": {Multi: map[string]bool{"criterion": true},
						Blocks: map[string]*Schema{"criterion": {Labels: named, Attrs: []string{"weight", "description"}}}}}},
				"plan":        {Attrs: []string{"max_steps", "max_parallel_steps", "step_timeout", "allow_replanning", "continue_after_step_failure"}},
				"knowledge":   {Attrs: []string{"store", "max_context_items", "relevance_threshold", "auto_persist"}},
				"progress":    {Attrs: []string{"max_reattempts_per_step", "similarity_threshold", "on_limit"}},
				"pre_hydrate": {Attrs: []string{"resolvers", "patterns", "max_references", "max_context_tokens", "timeout"}},
			}},
		"best_of_n": {Labels: named,
			Attrs: []string{"agent", "candidates", "max_concurrency", "timeout", "minimum_score", "tie_tolerance", "side_effects", "budget"},
			Blocks: map[string]*Schema{
				"vary": {Open: true}, // each attribute is a deferred expression
				"estimate": {Attrs: []string{"model_calls_per_candidate", "total_tokens_per_candidate", "cost_usd_per_candidate",
					"scorer_model_calls_per_candidate", "scorer_total_tokens_per_candidate", "scorer_cost_usd_per_candidate"}},
				"scorer":   {Attrs: []string{"judge", "expr", "effect", "timeout"}, Blocks: map[string]*Schema{"command": commandSchema()}},
				"selector": {Attrs: []string{"kind", "key", "effect", "timeout"}, Blocks: map[string]*Schema{"command": commandSchema()}},
			}},
	}
}
