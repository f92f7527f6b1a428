package interp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// check runs the checks that need the whole plan: they follow references
// across blocks. The plan is sorted, so lookups are binary searches.
func (c *compiler) check(ctx context.Context) {
	c.fillMCPEffects()
	c.fillOnResume()
	c.checkAgents()
	c.checkCapabilities()
	c.checkPricing()
	c.checkPreflight()
	c.checkDelegationCycles()
	c.checkRecoveryCycles()
	c.checkPolicies(ctx)
	c.warnUnused()
}

func (c *compiler) block(addr string) *lang.Block {
	kind, name, _ := strings.Cut(addr, ".")
	return c.symbols[kind][name]
}

func (c *compiler) attrRange(addr, attr string) *hcl.Range {
	b := c.block(addr)
	if b == nil {
		return nil
	}
	if a := b.Attrs[attr]; a != nil {
		return a.Expr.Range().Ptr()
	}
	return b.DefRange.Ptr()
}

// fillMCPEffects gives an mcp tool without an effect its server's effect.
func (c *compiler) fillMCPEffects() {
	for i := range c.p.Tools {
		t := &c.p.Tools[i]
		if t.Executor.Kind == "mcp" && t.Effect == "" {
			t.Effect = plan.DefaultEffect // the server is unknown (reported elsewhere)
			if s := c.p.MCPServer(t.Executor.MCP.Server); s != nil {
				t.Effect = s.Effect
			}
		}
	}
}

// fillOnResume gives a tool without on_resume the default of its effect,
// once every effect is known: a call that may have changed the world is
// reported, not repeated; one that only reads is retried.
func (c *compiler) fillOnResume() {
	for i := range c.p.Tools {
		t := &c.p.Tools[i]
		if t.OnResume == "" {
			t.OnResume = plan.DefaultOnResume(t.Effect)
		}
	}
}

func (c *compiler) checkAgents() {
	for i := range c.p.Agents {
		a := &c.p.Agents[i]
		var names []string
		hasMCP := false
		for _, addr := range a.Tools {
			if strings.HasPrefix(addr, "tool.") {
				names = append(names, strings.TrimPrefix(addr, "tool."))
			} else {
				hasMCP = true
			}
		}
		eff := names
		if a.ToolProfile != "" {
			if tp := c.p.ToolProfile(a.ToolProfile); tp != nil {
				eff = builtins.ApplyProfile(names, tp.Include, tp.Exclude, tp.MaxTools)
			}
		}
		a.EffectiveTools = make([]string, 0, len(eff))
		for _, n := range eff {
			a.EffectiveTools = append(a.EffectiveTools, "tool."+n)
		}
		if len(a.EffectiveTools) == 0 {
			a.EffectiveTools = nil
		}
		c.checkResolvers(a)
		switch tc := a.Loop.ToolChoice; tc {
		case "auto", "required", "none":
		default:
			if !hasMCP && !checkEnum(tc, eff) {
				c.errorf(c.loopAttr(a.Address, "tool_choice"), "Invalid value for tool_choice",
					"%q is not \"auto\", \"required\", \"none\" or one of this agent's tools (%s).%s", tc, strings.Join(eff, ", "), suggest(tc, append(eff, "auto", "required", "none")))
			}
		}
		c.checkTerminate(a, eff)
		if a.Reflect != nil && a.Reflect.Evaluator != "" && a.Loop.Mode != "reflect_and_retry" {
			c.warnf(c.block(a.Address).DefRange.Ptr(), "Reflect block unused", "%s has a reflect block, but its mode is %s; the block takes effect in mode reflect_and_retry.", a.Address, a.Loop.Mode)
		}
		if (len(a.Tools) > 0 || len(a.Delegates) > 0) && len(a.Policies) == 0 && a.Loop.OnNoPolicy == "deny" {
			c.warnf(c.attrRange(a.Address, "tools"), "Agent has tools but no policy",
				"%s has tools but no policy, so every tool call will be denied (on_no_policy = \"deny\"). Add policies = [policy.NAME] with a rule that allows them, or set on_no_policy = \"allow\" in its loop block.", a.Address)
		} else if len(a.Policies) > 0 && a.Loop.OnNoPolicy == "deny" {
			c.warnNeverAllowed(a, eff)
		}
	}
}

// checkTerminate refuses a configured tool named terminate beside
// allow_terminate: the model, the journal and a rules pattern could not
// tell the tool from the action. It warns when the loop never offers the
// terminate tool.
func (c *compiler) checkTerminate(a *plan.Agent, tools []string) {
	if !a.Loop.AllowTerminate {
		return
	}
	for _, n := range tools {
		if n == plan.TerminateTool {
			c.errorf(c.attrRange(a.Address, "tools"), "Tool name clashes with terminate",
				"%s sets allow_terminate, which gives its model a tool named %q, and it also lists tool.%s. Rename the tool or remove allow_terminate.", a.Address, plan.TerminateTool, plan.TerminateTool)
		}
	}
	switch {
	case a.Loop.Mode == "simple":
		c.warnf(c.loopAttr(a.Address, "allow_terminate"), "allow_terminate unused",
			"%s runs in mode simple, which offers the model no tools, so the terminate tool is never offered.", a.Address)
	case a.Loop.ToolChoice == "none":
		c.warnf(c.loopAttr(a.Address, "allow_terminate"), "allow_terminate unused",
			"%s sets tool_choice = \"none\", which offers the model no tools, so the terminate tool is never offered.", a.Address)
	}
}

// warnNeverAllowed warns about tools that an agent lists but none of its
// policies could allow. Only rules policies can be read this way; an agent
// with an OPA or Cedar policy is given the benefit of the doubt.
func (c *compiler) warnNeverAllowed(a *plan.Agent, tools []string) {
	var gates []policy.Gate
	for _, addr := range a.Policies {
		pol := c.p.Policy(addr)
		if pol == nil || pol.Kind != "rules" || pol.Rules == nil {
			return // OPA and Cedar might allow anything
		}
		g, err := policy.NewRules(*pol.Rules)
		if err != nil {
			return // reported on the rule itself
		}
		gates = append(gates, g)
	}
	for _, t := range tools {
		deniedBy, allowed := "", false
		for i, g := range gates {
			if policy.DeniesTool(g, t) {
				deniedBy = a.Policies[i]
				break
			}
			allowed = allowed || policy.MayAllowTool(g, t)
		}
		switch {
		case deniedBy != "":
			c.warnf(c.attrRange(a.Address, "tools"), "Tool always denied",
				"%s lists tool.%s, but %s denies it outright, and a deny wins over any allow, so every call would be denied. Remove the tool or the deny pattern.", a.Address, t, deniedBy)
		case !allowed:
			c.warnf(c.attrRange(a.Address, "tools"), "Tool never allowed",
				"%s lists tool.%s, but none of its policies allows or asks for it, so every call would be denied (on_no_policy = \"deny\"). Add %q to a rules policy's allow list.", a.Address, t, t)
		}
	}
}

func (c *compiler) loopAttr(agent, attr string) *hcl.Range {
	b := c.block(agent)
	if lb := b.One("loop"); lb != nil && lb.Attrs[attr] != nil {
		return lb.Attrs[attr].Expr.Range().Ptr()
	}
	return b.DefRange.Ptr()
}

// checkCapabilities refuses a router that no model can satisfy and an agent
// with tools whose models cannot call tools: both would fail on every call.
func (c *compiler) checkCapabilities() {
	hasAll := func(m *plan.Model, need []string) bool {
		for _, n := range need {
			if !checkEnum(n, m.Capabilities) {
				return false
			}
		}
		return true
	}
	for _, r := range c.p.Routers {
		if len(r.Require) == 0 {
			continue
		}
		ok := false
		for _, addr := range r.Models {
			if m := c.p.Model(addr); m != nil && hasAll(m, r.Require) && m.Quality >= r.MinimumQuality {
				ok = true
			}
		}
		if !ok && len(r.Models) > 0 {
			c.errorf(c.attrRange(r.Address, "require"), "Router can choose no model",
				"None of %s's models has every required capability (%s) at minimum_quality %g.", r.Address, strings.Join(r.Require, ", "), r.MinimumQuality)
		}
	}
	for _, a := range c.p.Agents {
		if len(a.Tools) == 0 && len(a.Delegates) == 0 && !a.Loop.AllowTerminate {
			continue
		}
		models := c.reachableModels(a.Model)
		capable := false
		for _, addr := range models {
			if m := c.p.Model(addr); m != nil && hasAll(m, []string{"tools"}) {
				capable = true
			}
		}
		if !capable && len(models) > 0 {
			c.errorf(c.attrRange(a.Address, "model"), "Model cannot call tools",
				"%s has tools, delegates or allow_terminate, but %s lists no \"tools\" capability, so it could never call them. Add \"tools\" to the model's capabilities or remove the tools.", a.Address, a.Model)
		}
	}
}

// reachableModels lists the models an agent can call: its model, or every
// model of its router.
func (c *compiler) reachableModels(addr string) []string {
	if strings.HasPrefix(addr, "router.") {
		if r := c.p.Router(addr); r != nil {
			return r.Models
		}
		return nil
	}
	if addr == "" {
		return nil
	}
	return []string{addr}
}

// checkPricing refuses a cost limit that could not be accounted: a model
// without pricing reachable under a budget with max_cost_usd.
func (c *compiler) checkPricing() {
	costBudget := func(addr string) (plan.Budget, bool) {
		if addr == "" {
			return plan.Budget{}, false
		}
		b := c.p.Budget(addr)
		return b, b.MaxCostUSD > 0
	}
	for _, a := range c.p.Agents {
		bu, ok := costBudget(a.Budget)
		if !ok {
			continue
		}
		c.checkPriced(a.Address, a.Model, bu, c.attrRange(a.Address, "model"))
	}
	for _, n := range c.p.BestOfN {
		bu, ok := costBudget(n.Budget)
		if !ok {
			continue
		}
		if a := c.p.Agent(n.Agent); a != nil {
			c.checkPriced(n.Address, a.Model, bu, c.attrRange(n.Address, "budget"))
		}
	}
}

func (c *compiler) checkPriced(who, modelAddr string, bu plan.Budget, subject *hcl.Range) {
	for _, m := range c.reachableModels(modelAddr) {
		if pm := c.p.Model(m); pm != nil && pm.Pricing == nil {
			via := ""
			if m != modelAddr {
				via = " (through " + modelAddr + ")"
			}
			c.errorf(subject, "Model without pricing under a cost limit",
				"%s is limited by %s (max_cost_usd = %g), but it can call %s%s, which has no pricing block, so its cost could not be accounted. Add pricing { input_usd_per_mtok = ..., output_usd_per_mtok = ... } to %s.",
				who, bu.Address, bu.MaxCostUSD, m, via, m)
		}
	}
}

// checkPreflight checks that best-of-N estimates fit every aggregate limit of
// its budget before any candidate starts. It applies the engine's own rule
// (budget.PreflightBestOfN), so a plan that compiles never fails the same
// check at run time.
func (c *compiler) checkPreflight() {
	for _, n := range c.p.BestOfN {
		if n.Budget == "" || c.hasUnknowns(n.Address) || c.hasUnknowns(n.Budget) {
			continue
		}
		err := budget.PreflightBestOfN(c.p.Budget(n.Budget), n.Estimate, n.Candidates)
		if err == nil {
			continue
		}
		subject := c.attrRange(n.Address, "candidates")
		var ex *budget.Exceeded
		var zero *budget.ZeroEstimateError
		switch {
		case errors.As(err, &ex):
			c.errorf(subject, "Best-of-N does not fit its budget",
				"%d candidates need %g by their estimates, more than %s %s = %g. Lower candidates, lower the estimates, or raise the limit.",
				n.Candidates, ex.Used, n.Budget, ex.Limit, ex.Max)
		case errors.As(err, &zero):
			c.errorf(subject, "Best-of-N estimate missing", "%s", c.zeroEstimateDetail(n, zero))
		default:
			c.errorf(subject, "Best-of-N estimate invalid", "%v.", err)
		}
	}
}

// zeroEstimateDetail says which limit needs an estimate the best_of_n
// block does not give, and how to fix it. A limit the budget block leaves
// out and inherits from the defaults (max_total_tokens = 100000) is named
// as such: the author who wrote only max_model_calls set no token limit
// they know of.
func (c *compiler) zeroEstimateDetail(n plan.BestOfN, zero *budget.ZeroEstimateError) string {
	fields := strings.Join(zero.Estimates, " + ")
	set := zero.Estimates[0]
	if len(zero.Estimates) > 1 {
		set += " (or " + strings.Join(zero.Estimates[1:], ", ") + ")"
	}
	if b := c.block(n.Budget); b != nil && b.Attrs[zero.Limit] == nil {
		def := policy.BudgetLimits(plan.DefaultBudget())[zero.Limit]
		return fmt.Sprintf("%s does not set %s, so it inherits the default %s = %v; that aggregate limit needs an estimate per candidate, and the estimate block leaves %s at 0. Set %s in %s's estimate block, or set %s = 0 in %s to leave it unlimited.",
			n.Budget, zero.Limit, zero.Limit, def, fields, set, n.Address, zero.Limit, n.Budget)
	}
	return fmt.Sprintf("%s sets %s, so the estimate block must give %s more than 0: the aggregate budget is reserved from it before candidates start. Set %s in %s's estimate block.",
		n.Budget, zero.Limit, fields, set, n.Address)
}

// hasUnknowns reports whether a block or one of its nested blocks had a
// value that is not known yet.
func (c *compiler) hasUnknowns(addr string) bool {
	if len(c.unknown) == 0 {
		return false
	}
	var walk func(b *lang.Block) bool
	walk = func(b *lang.Block) bool {
		if c.unknown[b] {
			return true
		}
		for _, n := range b.Blocks {
			if walk(n) {
				return true
			}
		}
		return false
	}
	b := c.block(addr)
	return b != nil && walk(b)
}

// checkDelegationCycles finds agents that delegate to themselves through
// other agents: such a chain could only end at the depth limit.
func (c *compiler) checkDelegationCycles() {
	edges := make(map[string][]string, len(c.p.Agents))
	for _, a := range c.p.Agents {
		edges[a.Address] = a.Delegates
	}
	c.findCycles(edges, func(cycle []string) {
		c.errorf(c.attrRange(cycle[0], "delegates"), "Delegation cycle", "These agents delegate to each other in a cycle: %s.", strings.Join(cycle, " → "))
	})
}

// checkRecoveryCycles finds tools whose recovery falls back, directly or
// through other tools' recoveries, to themselves.
func (c *compiler) checkRecoveryCycles() {
	edges := make(map[string][]string, len(c.p.Tools))
	for _, t := range c.p.Tools {
		if t.Recovery == "" {
			continue
		}
		r := c.p.Recovery(t.Recovery)
		if r == nil {
			continue
		}
		for _, s := range r.Strategies {
			if s.Fallback != nil {
				edges[t.Address] = append(edges[t.Address], s.Fallback.Tools...)
			}
		}
	}
	c.findCycles(edges, func(cycle []string) {
		c.errorf(c.attrRange(cycle[0], "recovery"), "Recovery cycle", "These tools fall back to each other in a cycle: %s. A fallback chain must end.", strings.Join(cycle, " → "))
	})
}

// findCycles reports each cycle once, by an iterative depth-first search so
// deep chains cannot exhaust the stack.
func (c *compiler) findCycles(edges map[string][]string, report func([]string)) {
	state := make(map[string]int, len(edges))
	for _, start := range keys(edges) {
		if state[start] != 0 {
			continue
		}
		type frame struct {
			node string
			next int
		}
		stack := []frame{{start, 0}}
		onStack := map[string]int{start: 0}
		state[start] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next >= len(edges[top.node]) {
				state[top.node] = 2
				delete(onStack, top.node)
				stack = stack[:len(stack)-1]
				continue
			}
			next := edges[top.node][top.next]
			top.next++
			switch state[next] {
			case 0:
				state[next] = 1
				onStack[next] = len(stack)
				stack = append(stack, frame{next, 0})
			case 1:
				i := onStack[next]
				cycle := make([]string, 0, len(stack)-i+1)
				for _, f := range stack[i:] {
					cycle = append(cycle, f.node)
				}
				report(append(cycle, next))
			}
		}
	}
}

// checkPolicies prepares every policy as the engine will (Rego compiled and
// its query prepared, Cedar parsed and validated against its schema) and
// reports a failure on the policy block.
func (c *compiler) checkPolicies(ctx context.Context) {
	loader := policy.NewLoader(c.p, c.baseDir) // the plan's Cedar entities, built once
	for _, pol := range c.p.Policies {
		// Rules are checked where they are written, with a better range.
		if pol.Kind == "" || pol.Kind == "rules" || (pol.Kind == "opa" && len(pol.OPA.Modules) == 0) || (pol.Kind == "cedar" && len(pol.Cedar.Policies) == 0) {
			continue // already reported
		}
		if _, err := loader.Gate(ctx, pol.Address); err != nil {
			var les policy.LoadErrors
			if errors.As(err, &les) && len(les) > 0 {
				for _, le := range les {
					summary := "Invalid " + kindName(pol.Kind) + " policy"
					if errors.Is(le.Err, policy.ErrNoOPAEngine) {
						// The policy may be fine: what is missing is
						// what decides it (the symbi-opa helper).
						summary = "No OPA engine"
					}
					c.errorf(c.policyFileRange(pol, le.File), summary, "%s.", strings.TrimSuffix(le.Error(), "."))
				}
				continue
			}
			c.errorf(c.block(pol.Address).DefRange.Ptr(), "Invalid "+kindName(pol.Kind)+" policy", "%s.", strings.TrimSuffix(err.Error(), "."))
		}
	}
}

// policyFileRange points at the attribute that named the file a policy
// error is in (modules, data, policies, entities, schema), or at the policy.
func (c *compiler) policyFileRange(pol plan.Policy, file string) *hcl.Range {
	b := c.block(pol.Address)
	has := func(refs ...*plan.FileRef) bool {
		for _, r := range refs {
			if r != nil && r.Path == file {
				return true
			}
		}
		return false
	}
	all := func(list []plan.FileRef) []*plan.FileRef {
		out := make([]*plan.FileRef, len(list))
		for i := range list {
			out[i] = &list[i]
		}
		return out
	}
	var inner, attr string
	switch {
	case pol.OPA != nil && has(all(pol.OPA.Modules)...):
		inner, attr = "opa", "modules"
	case pol.OPA != nil && has(pol.OPA.Data):
		inner, attr = "opa", "data"
	case pol.Cedar != nil && has(all(pol.Cedar.Policies)...):
		inner, attr = "cedar", "policies"
	case pol.Cedar != nil && has(pol.Cedar.Entities):
		inner, attr = "cedar", "entities"
	case pol.Cedar != nil && has(pol.Cedar.Schema):
		inner, attr = "cedar", "schema"
	case pol.OPA != nil && file == "":
		inner, attr = "opa", "query" // an undefined query names no file
	}
	if ib := b.One(inner); ib != nil && ib.Attrs[attr] != nil {
		return ib.Attrs[attr].Expr.Range().Ptr()
	}
	return b.DefRange.Ptr()
}

func kindName(k string) string {
	switch k {
	case "opa":
		return "Rego"
	case "cedar":
		return "Cedar"
	}
	return k
}

func (c *compiler) checkSchema(a *hcl.Attribute, raw []byte) {
	// Many tools share one schema; compiling each distinct one once keeps
	// large configurations fast.
	err, seen := c.schemas[string(raw)]
	if !seen {
		err = builtins.CompileSchema(raw)
		c.schemas[string(raw)] = err
	}
	if err != nil {
		c.errorf(a.Expr.Range().Ptr(), "Invalid JSON Schema", "parameters is not a valid JSON Schema: %s.", err)
	}
}

// checkResolvers requires pre_hydrate's resolver tools to be among the
// agent's effective tools: the engine resolves references with the agent's
// own toolset, through its own policies, like any call the agent makes.
func (c *compiler) checkResolvers(a *plan.Agent) {
	if a.PreHydrate == nil {
		return
	}
	var rng *hcl.Range
	if b := c.block(a.Address); b != nil {
		if hb := b.One("pre_hydrate"); hb != nil {
			if attr := hb.Attrs["resolvers"]; attr != nil {
				rng = attr.Expr.Range().Ptr()
			}
		}
	}
	for _, kind := range keys(a.PreHydrate.Resolvers) {
		t := a.PreHydrate.Resolvers[kind]
		if !checkEnum(t, a.EffectiveTools) {
			c.errorf(rng, "Resolver is not one of the agent's tools",
				"pre_hydrate resolves %s references with %s, which is not among %s's tools after its profile. Add it to the agent's tools (and allow it in a policy).", kind, t, a.Address)
		}
	}
}

// warnUnused warns about tools no agent can use and profiles that keep no
// tool. Neither is wrong, but both are usually a mistake.
func (c *compiler) warnUnused() {
	used := make(map[string]bool, len(c.p.Tools))
	for _, a := range c.p.Agents {
		for _, t := range a.Tools {
			used[t] = true
		}
		if a.PreHydrate != nil {
			for _, t := range a.PreHydrate.Resolvers {
				used[t] = true
			}
		}
	}
	for _, r := range c.p.Recoveries {
		for _, s := range r.Strategies {
			if s.Fallback != nil {
				for _, t := range s.Fallback.Tools {
					used[t] = true
				}
			}
		}
	}
	names := make([]string, 0, len(c.p.Tools))
	for _, t := range c.p.Tools {
		names = append(names, strings.TrimPrefix(t.Address, "tool."))
		if !used[t.Address] {
			c.warnf(c.block(t.Address).DefRange.Ptr(), "Tool not used", "No agent lists %s in its tools, so it can never be called.", t.Address)
		}
	}
	if len(c.p.MCPServers) > 0 {
		return // an MCP server's tools are known only at run time
	}
	for _, tp := range c.p.ToolProfiles {
		// One match is enough to know: stop there, so the check stays
		// linear when every agent has a profile.
		if len(builtins.ApplyProfile(names, tp.Include, tp.Exclude, 1)) == 0 {
			c.warnf(c.block(tp.Address).DefRange.Ptr(), "Tool profile matches no tool", "%s keeps none of the configured tools (%d declared).", tp.Address, len(names))
		}
	}
}
