package interp

import (
	"os"
	"path/filepath"
	"regexp"

	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
)

func compileRegexp(s string) (*regexp.Regexp, error) { return regexp.Compile(s) }

// readFile reads a file named relative to the configuration directory and
// records it in the plan.
func (c *compiler) readFile(p string) (*plan.FileRef, error) {
	if filepath.IsAbs(p) {
		return nil, &os.PathError{Op: "read", Path: p, Err: errAbsolute}
	}
	full := filepath.Join(c.baseDir, filepath.FromSlash(p))
	b, err := os.ReadFile(full)
	if err != nil {
		return nil, err
	}
	rel := c.relPath(full)
	ref := plan.NewFileRef(rel, b)
	c.reads[rel] = ref
	return &ref, nil
}

type constError string

func (e constError) Error() string { return string(e) }

const errAbsolute = constError("the path must be relative to the configuration directory")

var (
	modes       = []string{"simple", "react", "reflect_and_retry", "plan_execute"}
	profiles    = []string{"auto", "simple_answer", "tool_required", "complex_analysis", "plan_required", "high_confidence_answer"}
	ctxStrategy = []string{"sliding_window", "observation_masking", "anchored_summary"}
	onLimits    = []string{"skip", "abort", "escalate"}
)

func (c *compiler) buildAgent(b *lang.Block) plan.Agent {
	c.require(b, "model")
	a := plan.Agent{
		Address:     b.Address(),
		Description: c.str(b, "description", ""),
		Model:       c.ref(b, "model", "model", "router"),
		System:      c.str(b, "system", ""),
		Tools:       c.refs(b, "tools", "tool", "mcp_server"),
		ToolProfile: c.ref(b, "tool_profile", "tool_profile"),
		Policies:    c.refs(b, "policies", "policy"),
		Budget:      c.ref(b, "budget", "budget"),
		Delegates:   c.refs(b, "delegates", "agent"),
		Range:       c.prange(b.DefRange),
	}
	lb := b.One("loop")
	profile := c.enum(lb, "profile", "", profiles...)
	allowTerminate := c.boolean(lb, "allow_terminate", false)
	// The loop defaults a profile selects, as the Wuwe policy selection
	// does: one built-in setting per kind of task; fields the author writes
	// override them. The terminate tool is a tool: an agent offered only it
	// still runs the react loop by default, where tools are offered.
	def := plan.DefaultLoop(profile, len(a.Tools) > 0 || len(a.Delegates) > 0 || allowTerminate)
	a.Loop = plan.Loop{
		Mode:               c.enum(lb, "mode", def.Mode, modes...),
		Profile:            profile,
		ToolTimeout:        c.duration(lb, "tool_timeout", def.ToolTimeout),
		MaxConcurrentTools: c.intv(lb, "max_concurrent_tools", def.MaxConcurrentTools),
		MaxOutputTokens:    c.intv(lb, "max_output_tokens", def.MaxOutputTokens),
		ToolChoice:         c.str(lb, "tool_choice", def.ToolChoice),
		Recovery:           c.ref(lb, "recovery", "recovery"),
		OnNoPolicy:         c.enum(lb, "on_no_policy", def.OnNoPolicy, "deny", "allow"),
		MaxDelegationDepth: c.intv(lb, "max_delegation_depth", def.MaxDelegationDepth),
		AllowTerminate:     allowTerminate,
	}
	if lb != nil && lb.Attrs["temperature"] != nil {
		t := c.number(lb, "temperature", 0)
		if t > 2 {
			c.errorf(lb.Attrs["temperature"].Expr.Range().Ptr(), "Invalid value", "temperature must be between 0 and 2.")
		}
		a.Loop.Temperature = &t
	}
	if a.Loop.MaxConcurrentTools < 1 {
		c.errorf(lb.Attrs["max_concurrent_tools"].Expr.Range().Ptr(), "Invalid value", "max_concurrent_tools must be at least 1.")
	}

	cb, dc := b.One("context"), plan.DefaultContextSettings()
	a.Context = plan.ContextSettings{
		Strategy:    c.enum(cb, "strategy", dc.Strategy, ctxStrategy...),
		TokenBudget: c.intv(cb, "token_budget", dc.TokenBudget),
		Recent:      c.intv(cb, "recent", dc.Recent),
	}

	if rb := b.One("reflect"); rb != nil {
		d := plan.DefaultReflect()
		r := &plan.Reflect{
			Evaluator:   c.ref(rb, "evaluator", "agent"),
			MaxAttempts: c.intv(rb, "max_attempts", d.MaxAttempts),
			PassScore:   c.fraction(rb, "pass_score", d.PassScore),
			ReviseScore: c.fraction(rb, "revise_score", d.ReviseScore),
			RetryScore:  c.fraction(rb, "retry_score", d.RetryScore),
		}
		if rub := rb.One("rubric"); rub != nil {
			for _, cr := range rub.Nested("criterion") {
				r.Rubric = append(r.Rubric, plan.Criterion{
					Name:        cr.Name,
					Weight:      c.number(cr, "weight", plan.DefaultCriterionWeight),
					Description: c.str(cr, "description", ""),
				})
			}
		}
		hasEval, hasRubric := rb.Attrs["evaluator"] != nil, rb.One("rubric") != nil
		if hasEval == hasRubric {
			c.errorf(rb.DefRange.Ptr(), "Reflect needs one evaluator", "A reflect block needs exactly one of evaluator = agent.NAME and a rubric block.")
		}
		if !(r.RetryScore <= r.ReviseScore && r.ReviseScore <= r.PassScore) {
			c.errorf(rb.DefRange.Ptr(), "Inconsistent reflect scores", "The scores must satisfy retry_score <= revise_score <= pass_score (here %g, %g, %g).", r.RetryScore, r.ReviseScore, r.PassScore)
		}
		if r.Evaluator == a.Address {
			c.errorf(rb.Attrs["evaluator"].Expr.Range().Ptr(), "Agent evaluates itself", "An agent cannot be its own evaluator; name another agent.")
		}
		a.Reflect = r
	} else if a.Loop.Mode == "reflect_and_retry" {
		c.errorf(b.DefRange.Ptr(), "Missing reflect block", "Mode reflect_and_retry (here from %s) needs a reflect block with an evaluator or a rubric.", modeOrigin(lb))
	}

	pb, dp := b.One("plan"), plan.DefaultPlanSettings()
	a.Plan = plan.PlanSettings{
		MaxSteps:                 c.intv(pb, "max_steps", dp.MaxSteps),
		MaxParallelSteps:         c.intv(pb, "max_parallel_steps", dp.MaxParallelSteps),
		StepTimeout:              c.duration(pb, "step_timeout", dp.StepTimeout),
		AllowReplanning:          c.boolean(pb, "allow_replanning", dp.AllowReplanning),
		ContinueAfterStepFailure: c.boolean(pb, "continue_after_step_failure", dp.ContinueAfterStepFailure),
	}

	if kb := b.One("knowledge"); kb != nil {
		c.require(kb, "store")
		d := plan.DefaultAgentKnowledge()
		a.Knowledge = &plan.AgentKnowledge{
			Store:              c.ref(kb, "store", "knowledge"),
			MaxContextItems:    c.intv(kb, "max_context_items", d.MaxContextItems),
			RelevanceThreshold: c.fraction(kb, "relevance_threshold", d.RelevanceThreshold),
			AutoPersist:        c.boolean(kb, "auto_persist", d.AutoPersist),
		}
	}

	gb, dg := b.One("progress"), plan.DefaultProgress()
	a.Progress = plan.Progress{
		MaxReattemptsPerStep: c.intv(gb, "max_reattempts_per_step", dg.MaxReattemptsPerStep),
		SimilarityThreshold:  c.fraction(gb, "similarity_threshold", dg.SimilarityThreshold),
		OnLimit:              c.enum(gb, "on_limit", dg.OnLimit, onLimits...),
	}

	if hb := b.One("pre_hydrate"); hb != nil {
		d := plan.DefaultPreHydrate()
		a.PreHydrate = &plan.PreHydrate{
			Resolvers:        c.refMap(hb, "resolvers", "tool"),
			Patterns:         c.stringMap(hb, "patterns"),
			MaxReferences:    c.intv(hb, "max_references", d.MaxReferences),
			MaxContextTokens: c.intv(hb, "max_context_tokens", d.MaxContextTokens),
			Timeout:          c.duration(hb, "timeout", d.Timeout),
		}
		for name, re := range a.PreHydrate.Patterns {
			if _, err := compileRegexp(re); err != nil {
				c.errorf(hb.Attrs["patterns"].Expr.Range().Ptr(), "Invalid regular expression", "pattern %q: %s.", name, err)
			}
		}
		kinds := []string{"url", "file"}
		for name := range a.PreHydrate.Patterns {
			kinds = append(kinds, name)
		}
		for _, kind := range keys(a.PreHydrate.Resolvers) {
			if !checkEnum(kind, kinds) {
				c.errorf(hb.Attrs["resolvers"].Expr.Range().Ptr(), "Unknown reference kind",
					"resolvers has %q, which is neither url, file nor a name in patterns.%s", kind, suggest(kind, kinds))
			}
		}
	}
	return a
}

func modeOrigin(lb *lang.Block) string {
	if lb != nil && lb.Attrs["mode"] != nil {
		return "mode"
	}
	return "the profile"
}

// refMap reads an object whose values are references.
func (c *compiler) refMap(b *lang.Block, name string, kinds ...string) map[string]string {
	a := b.Attrs[name]
	if a == nil {
		return nil
	}
	pairs, diags := hclExprMap(a.Expr)
	if diags {
		c.errorf(a.Expr.Range().Ptr(), "Invalid map", "%s must be an object of references such as { url = tool.fetch }.", name)
		return nil
	}
	out := map[string]string{}
	for _, kv := range pairs {
		k, ok := c.eval(kv.Key)
		if !ok || !k.IsKnown() || k.IsNull() || k.Type() != cty.String {
			continue
		}
		if addr := c.resolve(kv.Value, name, kinds); addr != "" {
			out[k.AsString()] = addr
		}
	}
	return out
}
