package interp

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

func (c *compiler) buildSettings() {
	s := &c.p.Settings
	d := plan.DefaultSettings()
	*s = d
	for i, b := range c.mod.Settings {
		if i > 0 {
			c.errorf(b.DefRange.Ptr(), "Duplicate symbi block", "Only one symbi block is allowed; the first is at %s.", c.mod.Settings[0].DefRange)
			continue
		}
		s.RequiredVersion = c.str(b, "required_version", "")
		if s.RequiredVersion != "" {
			rng := b.Attrs["required_version"].Expr.Range().Ptr()
			if ok, err := checkVersion(s.RequiredVersion, c.version()); err != nil {
				c.errorf(rng, "Invalid version constraint", "%s.", err)
			} else if !ok && c.opts.SymbiVersion != "" {
				c.errorf(rng, "Unsupported symbi version", "This configuration requires symbi %s, but this is symbi %s.", s.RequiredVersion, c.opts.SymbiVersion)
			}
		}
		s.StateDir = c.relDir(b, "state_dir", d.StateDir)
		s.JournalSync = c.enum(b, "journal_sync", d.JournalSync, "background", "always")
		s.Workspace = c.relDir(b, "workspace", d.Workspace)
		if tb := b.One("telemetry"); tb != nil {
			s.Telemetry = c.buildTelemetry(tb)
		}
		if db := b.One("decision_log"); db != nil {
			c.require(db, "path")
			s.DecisionLog = &plan.DecisionLog{Path: c.str(db, "path", "")}
			if s.DecisionLog.Path == "" && db.Attrs["path"] != nil {
				c.errorf(db.Attrs["path"].Expr.Range().Ptr(), "Invalid value", "path must name a file.")
			}
		}
		s.OnDrift = c.enum(b, "on_drift", "", onDrift...)
		for j, tb := range b.Nested("temporal") {
			if j > 0 {
				c.errorf(tb.DefRange.Ptr(), "Duplicate temporal block", "Only one temporal block is allowed in the symbi block.")
				continue
			}
			s.Temporal = &plan.TemporalSettings{
				Address:   c.str(tb, "address", ""),
				Namespace: c.str(tb, "namespace", ""),
				TaskQueue: c.str(tb, "task_queue", plan.DefaultTaskQueue),
			}
		}
	}
}

// buildTelemetry reads a telemetry block; what it leaves out is
// plan.DefaultTelemetry's.
func (c *compiler) buildTelemetry(b *lang.Block) *plan.Telemetry {
	d := plan.DefaultTelemetry()
	t := &plan.Telemetry{
		Endpoint:        c.str(b, "endpoint", ""),
		Protocol:        c.enum(b, "protocol", d.Protocol, "grpc", "http/protobuf"),
		Headers:         c.pstringMap(b, "headers"),
		ServiceName:     c.str(b, "service_name", d.ServiceName),
		TracesExporter:  c.enum(b, "traces_exporter", d.TracesExporter, "otlp", "console", "none"),
		MetricsExporter: c.enum(b, "metrics_exporter", d.MetricsExporter, "otlp", "console", "none"),
		Sampler: c.enum(b, "sampler", d.Sampler, "always_on", "always_off", "traceidratio",
			"parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"),
		CaptureContent: c.boolean(b, "capture_content", d.CaptureContent),
		OnFailure:      c.enum(b, "on_failure", d.OnFailure, "ignore", "fail"),
	}
	if t.Endpoint != "" {
		if u, err := url.Parse(t.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.errorf(b.Attrs["endpoint"].Expr.Range().Ptr(), "Invalid endpoint", "endpoint must be an http:// or https:// URL with a host, such as \"http://localhost:4318\"; %q is not.", t.Endpoint)
		}
	}
	if t.ServiceName == "" {
		c.errorf(b.Attrs["service_name"].Expr.Range().Ptr(), "Invalid value", "service_name must not be empty.")
		t.ServiceName = d.ServiceName
	}
	if b.Attrs["sampler_arg"] != nil {
		f := c.fraction(b, "sampler_arg", 1)
		t.SamplerArg = &f
		if !strings.HasSuffix(t.Sampler, "traceidratio") {
			c.errorf(b.Attrs["sampler_arg"].Expr.Range().Ptr(), "Unused sampler_arg", "sampler_arg is the ratio of the traceidratio samplers; sampler is %q.", t.Sampler)
		}
	}
	return t
}

// onDrift are the values of on_drift, in the symbi block and mcp_server.
var onDrift = []string{plan.OnDriftRefuse, plan.OnDriftHideTool, plan.OnDriftWarn}

// version is the running symbi's version; without one, constraints are
// only checked for syntax.
func (c *compiler) version() string {
	if c.opts.SymbiVersion != "" {
		return c.opts.SymbiVersion
	}
	return "0.0.0"
}

// relDir reads a path that must stay relative, so the plan does not depend
// on where it was made.
func (c *compiler) relDir(b *lang.Block, name, def string) string {
	p := c.str(b, name, def)
	if filepath.IsAbs(p) || path.IsAbs(filepath.ToSlash(p)) {
		c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Absolute path", "%s must be relative to the configuration directory, so the plan is the same on every machine.", name)
		return def
	}
	return path.Clean(filepath.ToSlash(p))
}

// buildBlocks builds the plan entry of every named block, dispatched by type.
func (c *compiler) buildBlocks() {
	for _, b := range c.mod.Blocks {
		switch b.Type {
		case "model":
			c.p.Models = append(c.p.Models, c.buildModel(b))
		case "router":
			c.p.Routers = append(c.p.Routers, c.buildRouter(b))
		case "tool":
			c.p.Tools = append(c.p.Tools, c.buildTool(b))
		case "mcp_server":
			c.p.MCPServers = append(c.p.MCPServers, c.buildMCPServer(b))
		case "tool_profile":
			c.p.ToolProfiles = append(c.p.ToolProfiles, c.buildToolProfile(b))
		case "policy":
			c.p.Policies = append(c.p.Policies, c.buildPolicy(b))
		case "policy_test":
			c.p.PolicyTests = append(c.p.PolicyTests, c.buildPolicyTest(b))
		case "budget":
			c.p.Budgets = append(c.p.Budgets, c.buildBudget(b))
		case "recovery":
			c.p.Recoveries = append(c.p.Recoveries, c.buildRecovery(b))
		case "knowledge":
			c.p.Knowledge = append(c.p.Knowledge, c.buildKnowledge(b))
		case "agent":
			c.p.Agents = append(c.p.Agents, c.buildAgent(b))
		case "best_of_n":
			c.p.BestOfN = append(c.p.BestOfN, c.buildBestOfN(b))
		default:
			panic("interp: no builder for block type " + b.Type) // schema and switch disagree
		}
	}
}

var (
	providers = []string{"anthropic", "openai", "scripted"}
	// anthropicOnly are the model attributes only the anthropic provider
	// reads.
	anthropicOnly = []string{"max_tokens", "thinking", "thinking_budget_tokens", "prompt_cache"}
	capabilities  = []string{"tools", "streaming", "json"}
)

func (c *compiler) buildModel(b *lang.Block) plan.Model {
	c.require(b, "provider")
	provider := c.enum(b, "provider", "", providers...)
	d := plan.DefaultModel(provider)
	m := plan.Model{
		Address:       b.Address(),
		Provider:      provider,
		Name:          c.str(b, "name", ""),
		BaseURL:       c.pstring(b, "base_url"),
		APIKeyEnv:     c.str(b, "api_key_env", ""),
		Capabilities:  c.enumList(b, "capabilities", capabilities),
		ContextWindow: c.intv(b, "context_window", d.ContextWindow),
		Quality:       c.fraction(b, "quality", d.Quality),
		Latency:       c.fraction(b, "latency", d.Latency),
		Range:         c.prange(b.DefRange),
	}
	m.MaxResponseBytes = c.integer(b, "max_response_bytes", d.MaxResponseBytes)
	if a := b.Attrs["max_response_bytes"]; a != nil && (m.MaxResponseBytes < plan.MinMaxResponseBytes || m.MaxResponseBytes > plan.MaxMaxResponseBytes) {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value", "max_response_bytes must be between %d (1 KiB) and %d (16 MiB), not %d.", plan.MinMaxResponseBytes, plan.MaxMaxResponseBytes, m.MaxResponseBytes)
		m.MaxResponseBytes = d.MaxResponseBytes
	}
	switch m.Provider {
	case "openai", "anthropic":
		c.require(b, "name")
		if m.BaseURL.IsZero() {
			m.BaseURL = d.BaseURL
		}
		if m.APIKeyEnv == "" {
			m.APIKeyEnv = d.APIKeyEnv
		}
		if m.Capabilities == nil {
			m.Capabilities = d.Capabilities
		}
		if a := b.Attrs["script"]; a != nil {
			c.errorf(a.NameRange.Ptr(), "Unexpected argument", "script belongs to a scripted model; this model's provider is %s.", m.Provider)
		}
		if m.Provider == "anthropic" {
			c.buildAnthropic(b, &m, d)
		}
	case "scripted":
		c.require(b, "script")
		if m.Capabilities == nil {
			m.Capabilities = d.Capabilities
		}
		if ref := c.readFileAttr(b, "script"); ref != nil {
			m.Script = ref
		}
	}
	if m.Provider != "anthropic" {
		for _, name := range anthropicOnly {
			if a := b.Attrs[name]; a != nil {
				c.errorf(a.NameRange.Ptr(), "Unexpected argument", "%s belongs to an anthropic model; this model's provider is %s.", name, m.Provider)
			}
		}
	}
	sort.Strings(m.Capabilities)
	if p := b.One("pricing"); p != nil {
		c.require(p, "input_usd_per_mtok", "output_usd_per_mtok")
		m.Pricing = &plan.Pricing{
			InputUSDPerMTok:      c.number(p, "input_usd_per_mtok", 0),
			OutputUSDPerMTok:     c.number(p, "output_usd_per_mtok", 0),
			CacheReadUSDPerMTok:  c.optNumber(p, "cache_read_usd_per_mtok"),
			CacheWriteUSDPerMTok: c.optNumber(p, "cache_write_usd_per_mtok"),
		}
		if m.Provider == "anthropic" {
			anthropicCachePrices(m.Pricing, m.PromptCache)
		}
	}
	t, dt := b.One("timeouts"), d.Timeouts
	m.Timeouts = plan.ModelTimeouts{
		Total:      c.duration(t, "total", dt.Total),
		Connect:    c.duration(t, "connect", dt.Connect),
		FirstEvent: c.duration(t, "first_event", dt.FirstEvent),
		Idle:       c.duration(t, "idle", dt.Idle),
	}
	r, dr := b.One("retry"), d.Retry
	m.Retry = plan.TransportRetry{
		MaxAttempts: c.intv(r, "max_attempts", dr.MaxAttempts),
		Backoff:     c.duration(r, "backoff", dr.Backoff),
		MaxBackoff:  c.duration(r, "max_backoff", dr.MaxBackoff),
		Jitter:      c.fraction(r, "jitter", dr.Jitter),
	}
	return m
}

// buildAnthropic reads the attributes only an anthropic model has, with
// their defaults and ranges.
func (c *compiler) buildAnthropic(b *lang.Block, m *plan.Model, d plan.Model) {
	m.MaxTokens = c.atLeastOne(b, "max_tokens", c.intv(b, "max_tokens", d.MaxTokens), d.MaxTokens)
	m.Thinking = c.enum(b, "thinking", d.Thinking, "off", "enabled", "adaptive")
	m.PromptCache = c.enum(b, "prompt_cache", d.PromptCache, "none", "5m", "1h")
	budget := b.Attrs["thinking_budget_tokens"]
	switch {
	case m.Thinking == "enabled" && budget == nil:
		c.errorf(b.Attrs["thinking"].Expr.Range().Ptr(), "Missing thinking budget", "thinking = \"enabled\" needs thinking_budget_tokens: how many tokens the model may think for, at least %d and less than max_tokens.", plan.MinThinkingBudgetTokens)
	case m.Thinking != "enabled" && budget != nil:
		c.errorf(budget.NameRange.Ptr(), "Unexpected argument", "thinking_budget_tokens applies when thinking = \"enabled\"; this model's thinking is %q.", m.Thinking)
	case budget != nil:
		m.ThinkingBudgetTokens = c.intv(b, "thinking_budget_tokens", 0)
		if m.ThinkingBudgetTokens < plan.MinThinkingBudgetTokens || m.ThinkingBudgetTokens >= m.MaxTokens {
			c.errorf(budget.Expr.Range().Ptr(), "Invalid value", "thinking_budget_tokens must be at least %d and less than max_tokens (%d), not %d.", plan.MinThinkingBudgetTokens, m.MaxTokens, m.ThinkingBudgetTokens)
		}
	}
}

// anthropicCachePrices fills in the prompt cache's prices an anthropic
// model's pricing leaves out, as Anthropic prices them: a read at a tenth
// of the input price, a write at 1.25 times it (twice it for the one-hour
// cache).
func anthropicCachePrices(p *plan.Pricing, ttl string) {
	// Rounded to a billionth of a dollar, so the plan says 0.3, not
	// 0.30000000000000004.
	price := func(factor float64) *float64 {
		v := math.Round(p.InputUSDPerMTok*factor*1e9) / 1e9
		return &v
	}
	if p.CacheReadUSDPerMTok == nil {
		p.CacheReadUSDPerMTok = price(0.1)
	}
	if p.CacheWriteUSDPerMTok == nil {
		if ttl == "1h" {
			p.CacheWriteUSDPerMTok = price(2)
		} else {
			p.CacheWriteUSDPerMTok = price(1.25)
		}
	}
}

// optNumber reads a finite, non-negative number that has no default: nil
// when the attribute is absent.
func (c *compiler) optNumber(b *lang.Block, name string) *float64 {
	if b == nil || b.Attrs[name] == nil {
		return nil
	}
	v := c.number(b, name, 0)
	return &v
}

// atLeastOne checks a whole number read from attribute name of b that 0
// would not make sense for (a count of things that must happen at least
// once, a cap on what always reaches the model): below 1 it is an error,
// and def stands in.
func (c *compiler) atLeastOne(b *lang.Block, name string, v, def int) int {
	if a := b.Attrs[name]; a != nil && v < 1 {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be at least 1; leave it out for the default, %d.", name, def)
		return def
	}
	return v
}

// enumList reads a list of strings, each one of allowed.
func (c *compiler) enumList(b *lang.Block, name string, allowed []string) []string {
	list := c.strings(b, name)
	for _, s := range list {
		if !checkEnum(s, allowed) {
			c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Invalid value for "+name, "%q is not one of %s.%s", s, strings.Join(quoteAll(allowed), ", "), suggest(s, allowed))
			return nil
		}
	}
	return list
}

// readFileAttr reads the file named by a path attribute and records it.
func (c *compiler) readFileAttr(b *lang.Block, name string) *plan.FileRef {
	p := c.str(b, name, "")
	if p == "" {
		return nil
	}
	ref, err := c.readFile(p)
	if err != nil {
		c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Cannot read file", "%s: %s.", name, err)
		return nil
	}
	return ref
}

var strategies = []string{"balanced", "lowest_cost", "highest_quality", "lowest_latency"}

func (c *compiler) buildRouter(b *lang.Block) plan.Router {
	c.require(b, "models")
	r := plan.Router{
		Address:        b.Address(),
		Strategy:       c.enum(b, "strategy", plan.DefaultRouterStrategy, strategies...),
		Models:         c.refs(b, "models", "model"),
		Prefer:         c.ref(b, "prefer", "model"),
		Require:        c.enumList(b, "require", capabilities),
		MinimumQuality: c.fraction(b, "minimum_quality", 0),
		Range:          c.prange(b.DefRange),
	}
	if b.Attrs["models"] != nil && len(r.Models) == 0 && len(b.Attrs["models"].Expr.Variables()) == 0 {
		c.errorf(b.Attrs["models"].Expr.Range().Ptr(), "Router without models", "A router needs at least one model to choose from.")
	}
	if r.Prefer != "" && !checkEnum(r.Prefer, r.Models) && len(r.Models) > 0 {
		c.errorf(b.Attrs["prefer"].Expr.Range().Ptr(), "Preferred model not in the router", "%s is not one of the router's models.", r.Prefer)
	}
	return r
}

var (
	effects   = []string{"none", "read", "write", "destructive"}
	approvals = []string{"never", "policy", "always"}
	onResumes = []string{"retry", "ask", "report"}
)

func (c *compiler) buildTool(b *lang.Block) plan.Tool {
	// A builtin brings its own description, schema, effect and idempotence
	// (builtins.BuiltinInfo); what the block writes wins.
	var kinds []string
	var builtin builtins.Info
	d := plan.DefaultTool()
	defEffect := d.Effect
	if b.Attrs["builtin"] != nil {
		kinds = append(kinds, "builtin")
		name := c.enum(b, "builtin", "", builtins.BuiltinNames()...)
		if info, ok := builtins.BuiltinInfo(name); ok {
			builtin = info
			defEffect = info.Effect
		}
	}
	// A tool named like an action the engine reserves would be mistaken
	// for it by the model, the journal and a rules pattern ("respond",
	// "delegate:target=…"). terminate is checked beside allow_terminate
	// (checkTerminate); the delegate builtin is the delegate tool itself.
	if (b.Name == plan.RespondAction || b.Name == plan.DelegateTool) && builtin.Name != plan.DelegateTool {
		c.errorf(b.DefRange.Ptr(), "Reserved tool name",
			"tool.%s takes the name of the %q action, which the engine reserves: the model, the journal and a policy could not tell the tool from the action. Rename the tool.", b.Name, b.Name)
	}
	t := plan.Tool{
		Address:        b.Address(),
		Description:    c.str(b, "description", builtin.Description),
		Idempotent:     c.boolean(b, "idempotent", builtin.Idempotent),
		Approval:       c.enum(b, "approval", d.Approval, approvals...),
		OnResume:       c.enum(b, "on_resume", "", onResumes...), // the default follows the effect (fillOnResume)
		Timeout:        c.duration(b, "timeout", d.Timeout),
		MaxOutputBytes: c.intv(b, "max_output_bytes", d.MaxOutputBytes),
		Tags:           c.strings(b, "tags"),
		Recovery:       c.ref(b, "recovery", "recovery"),
		Range:          c.prange(b.DefRange),
	}
	if b.Attrs["builtin"] != nil {
		t.Executor = plan.Executor{Kind: "builtin", Builtin: builtin.Name}
	}
	// Not "unlimited", as 0 is for a budget: a tool's output goes to the
	// model whole, so it is always capped.
	t.MaxOutputBytes = c.atLeastOne(b, "max_output_bytes", t.MaxOutputBytes, d.MaxOutputBytes)
	if t.Description == "" && b.Attrs["builtin"] == nil {
		c.require(b, "description")
	}
	if v, a, ok := c.value(b, "parameters", cty.DynamicPseudoType); ok {
		raw, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			c.errorf(a.Expr.Range().Ptr(), "Invalid parameters", "parameters cannot be written as JSON: %s.", err)
		} else {
			t.Parameters = json.RawMessage(raw)
			c.checkSchema(a, raw)
		}
	} else if b.Attrs["parameters"] == nil && builtin.Parameters != nil {
		t.Parameters = canonicalJSON(builtin.Parameters)
	}
	if cb := b.One("command"); cb != nil {
		kinds = append(kinds, "command")
		t.Executor = plan.Executor{Kind: "command", Command: c.buildCommand(cb)}
	}
	if hb := b.One("http"); hb != nil {
		kinds = append(kinds, "http")
		c.require(hb, "url")
		t.Executor = plan.Executor{Kind: "http", HTTP: &plan.HTTPExec{
			URL:     c.pstring(hb, "url"),
			Method:  c.enum(hb, "method", plan.DefaultHTTPMethod, "GET", "POST", "PUT", "PATCH", "DELETE"),
			Headers: c.pstringMap(hb, "headers"),
		}}
	}
	if mb := b.One("mcp"); mb != nil {
		kinds = append(kinds, "mcp")
		c.require(mb, "server")
		t.Executor = plan.Executor{Kind: "mcp", MCP: &plan.MCPExec{
			Server: c.ref(mb, "server", "mcp_server"),
			Tool:   c.str(mb, "tool", b.Name),
		}}
		defEffect = "" // the server's effect, filled in by check
	}
	switch len(kinds) {
	case 0:
		c.errorf(b.DefRange.Ptr(), "Tool without executor", "A tool needs exactly one executor: builtin = \"NAME\", or a command, http or mcp block.")
	case 1:
	default:
		c.errorf(b.DefRange.Ptr(), "Tool with more than one executor", "A tool needs exactly one executor, but this one has %s.", strings.Join(kinds, " and "))
	}
	t.Effect = c.enum(b, "effect", defEffect, effects...)
	t.AllowHosts = c.allowHosts(b, t.Executor.Builtin)
	t.CircuitBreaker = c.circuitBreaker(b)
	return t
}

// circuitBreaker reads the circuit_breaker block of a tool or an MCP
// server. Every tool has a breaker: without the block it is the default
// one, and only enabled = false turns it off.
func (c *compiler) circuitBreaker(b *lang.Block) *plan.CircuitBreaker {
	d := plan.DefaultCircuitBreaker()
	cb := b.One("circuit_breaker")
	if cb == nil {
		return &d
	}
	if !c.boolean(cb, "enabled", true) {
		for _, attr := range []string{"failure_threshold", "recovery_timeout", "half_open_max_calls"} {
			if a := cb.Attrs[attr]; a != nil {
				c.warnf(a.NameRange.Ptr(), "Setting of a disabled circuit breaker",
					"%s's circuit_breaker has enabled = false, so %s has no effect. Remove it, or enabled = false.", b.Address(), attr)
			}
		}
		return &plan.CircuitBreaker{Disabled: true}
	}
	return &plan.CircuitBreaker{
		FailureThreshold: c.atLeastOne(cb, "failure_threshold", c.intv(cb, "failure_threshold", d.FailureThreshold), d.FailureThreshold),
		RecoveryTimeout:  c.duration(cb, "recovery_timeout", d.RecoveryTimeout),
		HalfOpenMaxCalls: c.atLeastOne(cb, "half_open_max_calls", c.intv(cb, "half_open_max_calls", d.HalfOpenMaxCalls), d.HalfOpenMaxCalls),
	}
}

// allowHosts reads the hosts an http_get tool may fetch. The patterns are
// matched by builtins as path.Match globs against the URL's host and its
// host:port, so a malformed glob or a URL in their place is refused here.
func (c *compiler) allowHosts(b *lang.Block, builtin string) []string {
	a := b.Attrs["allow_hosts"]
	if a == nil {
		if builtin == "http_get" {
			c.warnf(b.DefRange.Ptr(), "http_get allows no host",
				"%s runs the builtin http_get but has no allow_hosts, so it can fetch nothing. Add allow_hosts = [\"example.com\", \"*.example.org:8443\"].", b.Address())
		}
		return nil
	}
	if b.Attrs["builtin"] == nil || (builtin != "" && builtin != "http_get") {
		c.errorf(a.NameRange.Ptr(), "Unexpected argument", "allow_hosts belongs to a tool whose builtin is http_get; %s fetches no URL.", b.Address())
		return nil
	}
	hosts := c.strings(b, "allow_hosts")
	for _, h := range hosts {
		if err := checkHost(h); err != nil {
			c.errorf(a.Expr.Range().Ptr(), "Invalid host", "allow_hosts: %q %s.", h, err)
		}
	}
	return hosts
}

func checkHost(h string) error {
	if strings.TrimSpace(h) != h || h == "" {
		return fmt.Errorf("is not a host name")
	}
	if strings.Contains(h, "/") {
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			return fmt.Errorf("is a URL; write the host alone, %q", u.Host)
		}
		return fmt.Errorf("is not a host name: write a name or glob, optionally with :port, such as \"*.example.com:8443\"")
	}
	if _, err := path.Match(h, ""); err != nil {
		return fmt.Errorf("is not a valid glob: %s", err)
	}
	return nil
}

// canonicalJSON rewrites JSON with sorted object keys, as ctyjson writes
// the schemas of the configuration, so the plan is canonical whatever order
// a builtin's schema was written in.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	b, err := builtins.CanonicalJSON(raw)
	if err != nil {
		panic("interp: a builtin's schema is not JSON: " + err.Error()) // builtins' own table is wrong
	}
	return b
}

func (c *compiler) buildCommand(b *lang.Block) *plan.CommandExec {
	c.require(b, "argv")
	cmd := &plan.CommandExec{
		Argv: c.pstrings(b, "argv"),
		Dir:  c.relDir(b, "dir", plan.DefaultCommandDir),
		Env:  c.pstringMap(b, "env"),
	}
	if b.Attrs["argv"] != nil && len(cmd.Argv) == 0 && !c.hasUnknown(b, "argv") {
		c.errorf(b.Attrs["argv"].Expr.Range().Ptr(), "Empty argv", "argv needs at least the program to run.")
	}
	return cmd
}

// hasUnknown reports whether an attribute depends on a value not known yet
// (validate without a variable's value), so checks on it wait for plan.
func (c *compiler) hasUnknown(b *lang.Block, name string) bool {
	for _, tr := range b.Attrs[name].Expr.Variables() {
		if tr.RootName() == "var" || tr.RootName() == "local" {
			v, diags := tr.TraverseAbs(c.scope)
			if diags.HasErrors() || !v.IsWhollyKnown() {
				return true
			}
		}
	}
	return false
}

func (c *compiler) buildMCPServer(b *lang.Block) plan.MCPServer {
	d := plan.DefaultMCPServer()
	s := plan.MCPServer{
		Address: b.Address(),
		Command: c.pstrings(b, "command"),
		URL:     c.pstring(b, "url"),
		Env:     c.pstringMap(b, "env"),
		Effect:  c.enum(b, "effect", d.Effect, effects...),
		Timeout: c.duration(b, "timeout", d.Timeout),
		Range:   c.prange(b.DefRange),
	}
	s.CircuitBreaker = c.circuitBreaker(b)
	def := d.OnDrift
	if c.p.Settings.OnDrift != "" {
		def = c.p.Settings.OnDrift
	}
	s.OnDrift = c.enum(b, "on_drift", def, onDrift...)
	hasCmd, hasURL := b.Attrs["command"] != nil, b.Attrs["url"] != nil
	if hasCmd == hasURL {
		c.errorf(b.DefRange.Ptr(), "MCP server needs one transport", "An mcp_server needs exactly one of command (stdio) and url (streamable HTTP).")
	}
	return s
}

func (c *compiler) buildToolProfile(b *lang.Block) plan.ToolProfile {
	tp := plan.ToolProfile{
		Address:  b.Address(),
		Include:  c.strings(b, "include"),
		Exclude:  c.strings(b, "exclude"),
		MaxTools: c.intv(b, "max_tools", 0),
		Range:    c.prange(b.DefRange),
	}
	for _, attr := range []string{"include", "exclude"} {
		list := tp.Include
		if attr == "exclude" {
			list = tp.Exclude
		}
		for _, g := range list {
			if _, err := path.Match(g, ""); err != nil {
				c.errorf(b.Attrs[attr].Expr.Range().Ptr(), "Invalid glob", "%q: %s.", g, err)
			}
		}
	}
	return tp
}

func (c *compiler) buildPolicy(b *lang.Block) plan.Policy {
	p := plan.Policy{Address: b.Address(), Range: c.prange(b.DefRange)}
	if c.enum(b, "mode", plan.PolicyModeEnforce, plan.PolicyModeEnforce, plan.PolicyModeShadow) == plan.PolicyModeShadow {
		p.Mode = plan.PolicyModeShadow
	}
	var kinds []string
	if r := b.One("rules"); r != nil {
		kinds = append(kinds, "rules")
		p.Kind = "rules"
		p.Rules = &plan.RulesPolicy{Deny: c.strings(r, "deny"), Ask: c.strings(r, "ask"), Allow: c.strings(r, "allow")}
		for _, attr := range []string{"deny", "ask", "allow"} {
			for _, pat := range c.strings(r, attr) {
				// Checked by the engine that will match it at run time.
				if _, err := policy.NewRules(plan.RulesPolicy{Allow: []string{pat}}); err != nil {
					c.errorf(r.Attrs[attr].Expr.Range().Ptr(), "Invalid rule", "%s.", err)
				}
			}
		}
	}
	if o := b.One("opa"); o != nil {
		kinds = append(kinds, "opa")
		c.require(o, "modules")
		p.Kind = "opa"
		p.OPA = &plan.OPAPolicy{
			Modules: c.readGlobs(o, "modules"),
			Data:    c.readFileAttr(o, "data"),
			Query:   c.str(o, "query", plan.DefaultOPAQuery),
		}
	}
	if cb := b.One("cedar"); cb != nil {
		kinds = append(kinds, "cedar")
		c.require(cb, "policies")
		p.Kind = "cedar"
		p.Cedar = &plan.CedarPolicy{
			Policies: c.readGlobs(cb, "policies"),
			Entities: c.readFileAttr(cb, "entities"),
			Schema:   c.readFileAttr(cb, "schema"),
		}
	}
	switch len(kinds) {
	case 0:
		c.errorf(b.DefRange.Ptr(), "Policy without engine", "A policy needs exactly one of a rules, opa or cedar block.")
	case 1:
	default:
		c.errorf(b.DefRange.Ptr(), "Policy with more than one engine", "A policy needs exactly one engine, but this one has %s; write one policy block for each.", strings.Join(kinds, " and "))
	}
	return p
}

// readGlobs expands a list of path globs, relative to the configuration
// directory, and reads every match in sorted order.
func (c *compiler) readGlobs(b *lang.Block, name string) []plan.FileRef {
	pats := c.strings(b, name)
	var out []plan.FileRef
	for _, pat := range pats {
		if filepath.IsAbs(pat) {
			c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Absolute path", "%q must be relative to the configuration directory.", pat)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(c.baseDir, filepath.FromSlash(pat)))
		if err != nil {
			c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Invalid glob", "%q: %s.", pat, err)
			continue
		}
		if len(matches) == 0 {
			c.errorf(b.Attrs[name].Expr.Range().Ptr(), "No files match", "%q matches no file in %s.", pat, c.displayDir())
			continue
		}
		sort.Strings(matches)
		for _, m := range matches {
			ref, err := c.readFile(c.relPath(m))
			if err != nil {
				c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Cannot read file", "%s.", err)
				continue
			}
			out = append(out, *ref)
		}
	}
	return out
}

func (c *compiler) displayDir() string {
	if c.baseDir == "" {
		return "."
	}
	return c.baseDir
}

var expectations = []string{"allow", "deny", "modify", "ask", "not_applicable"}

func (c *compiler) buildPolicyTest(b *lang.Block) plan.PolicyTest {
	c.require(b, "policy", "action", "expect")
	t := plan.PolicyTest{
		Address: b.Address(),
		Policy:  c.ref(b, "policy", "policy"),
		Agent:   c.ref(b, "agent", "agent"),
		Expect:  c.enum(b, "expect", "", expectations...),
		Reason:  c.str(b, "reason", ""),
		Range:   c.prange(b.DefRange),
	}
	if v, a, ok := c.value(b, "action", cty.DynamicPseudoType); ok {
		ty := v.Type()
		if !ty.IsObjectType() && !ty.IsMapType() {
			c.errorf(a.Expr.Range().Ptr(), "Invalid action", "action must be an object such as { type = \"tool_call\", tool = \"shell\", arguments = { cmd = \"ls\" } }.")
		} else if raw, err := ctyjson.Marshal(v, ty); err != nil {
			c.errorf(a.Expr.Range().Ptr(), "Invalid action", "%s.", err)
		} else {
			t.Action = json.RawMessage(raw)
			// The parser symbi policy test uses, so a test that compiles
			// also runs.
			if _, err := policy.ParseAction(raw); err != nil {
				c.errorf(a.Expr.Range().Ptr(), "Invalid action", "%s.", err)
			}
		}
	}
	if t.Reason != "" {
		if _, err := compileRegexp(t.Reason); err != nil {
			c.errorf(b.Attrs["reason"].Expr.Range().Ptr(), "Invalid regular expression", "reason: %s.", err)
		}
	}
	return t
}

func (c *compiler) buildBudget(b *lang.Block) plan.Budget {
	d := plan.DefaultBudget()
	bu := plan.Budget{
		Address:                      b.Address(),
		MaxIterations:                c.integer(b, "max_iterations", d.MaxIterations),
		MaxModelCalls:                c.integer(b, "max_model_calls", d.MaxModelCalls),
		MaxToolCalls:                 c.integer(b, "max_tool_calls", d.MaxToolCalls),
		MaxToolRounds:                c.integer(b, "max_tool_rounds", d.MaxToolRounds),
		MaxReflectionAttempts:        c.integer(b, "max_reflection_attempts", d.MaxReflectionAttempts),
		MaxPlanSteps:                 c.integer(b, "max_plan_steps", d.MaxPlanSteps),
		MaxPromptTokens:              c.integer(b, "max_prompt_tokens", d.MaxPromptTokens),
		MaxCompletionTokens:          c.integer(b, "max_completion_tokens", d.MaxCompletionTokens),
		MaxTotalTokens:               c.integer(b, "max_total_tokens", d.MaxTotalTokens),
		MaxCostUSD:                   c.number(b, "max_cost_usd", d.MaxCostUSD),
		Timeout:                      c.duration(b, "timeout", d.Timeout),
		EstimatedOutputTokensPerCall: c.integer(b, "estimated_output_tokens_per_call", d.EstimatedOutputTokensPerCall),
		Range:                        c.prange(b.DefRange),
	}
	return bu
}

var failureKinds = []string{"timeout", "transport", "rate_limited", "invalid_arguments", "error", "circuit_open"}

func (c *compiler) buildRecovery(b *lang.Block) plan.Recovery {
	r := plan.Recovery{Address: b.Address(), Range: c.prange(b.DefRange)}
	if len(b.Blocks) == 0 {
		c.errorf(b.DefRange.Ptr(), "Recovery without strategies", "A recovery block needs at least one strategy: retry, fallback, cached_result, llm_recovery, escalate or dead_letter.")
	}
	for _, s := range b.Blocks {
		st := plan.RecoveryStrategy{Kind: s.Type}
		switch s.Type {
		case "retry":
			d := plan.DefaultRetryStrategy()
			on := c.enumList(s, "on", failureKinds)
			if on == nil {
				on = d.On
			}
			st.Retry = &plan.RetryStrategy{
				MaxAttempts:    c.intv(s, "max_attempts", d.MaxAttempts),
				InitialBackoff: c.duration(s, "initial_backoff", d.InitialBackoff),
				MaxBackoff:     c.duration(s, "max_backoff", d.MaxBackoff),
				Multiplier:     c.number(s, "multiplier", d.Multiplier),
				Jitter:         c.fraction(s, "jitter", d.Jitter),
				On:             on,
			}
			if a := s.Attrs["multiplier"]; a != nil && st.Retry.Multiplier == 0 {
				c.errorf(a.Expr.Range().Ptr(), "Invalid value", "multiplier must be greater than 0; leave it out for the default, %g.", d.Multiplier)
				st.Retry.Multiplier = d.Multiplier
			}
		case "fallback":
			c.require(s, "tools")
			st.Fallback = &plan.FallbackStrategy{Tools: c.refs(s, "tools", "tool")}
		case "cached_result":
			d := plan.DefaultCachedResultStrategy()
			st.CachedResult = &plan.CachedResultStrategy{MaxStaleness: c.duration(s, "max_staleness", d.MaxStaleness)}
		case "llm_recovery":
			d := plan.DefaultLLMRecoveryStrategy()
			st.LLMRecovery = &plan.LLMRecoveryStrategy{MaxAttempts: c.intv(s, "max_attempts", d.MaxAttempts)}
		case "escalate":
			d := plan.DefaultEscalateStrategy()
			st.Escalate = &plan.EscalateStrategy{Queue: c.str(s, "queue", d.Queue), Timeout: c.duration(s, "timeout", d.Timeout)}
		case "dead_letter":
			st.DeadLetter = &plan.DeadLetterStrategy{Path: c.relDir(s, "path", plan.DefaultDeadLetterPath)}
		}
		r.Strategies = append(r.Strategies, st)
	}
	return r
}

func (c *compiler) buildKnowledge(b *lang.Block) plan.Knowledge {
	return plan.Knowledge{
		Address:     b.Address(),
		Path:        c.relDir(b, "path", plan.DefaultKnowledgePath(c.p.Settings.StateDir, b.Name)),
		Conventions: c.str(b, "conventions", ""),
		Range:       c.prange(b.DefRange),
	}
}
