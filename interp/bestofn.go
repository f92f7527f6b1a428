package interp

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
)

func hclExprMap(e hcl.Expression) ([]hcl.KeyValuePair, bool) {
	pairs, diags := hcl.ExprMap(e)
	return pairs, diags.HasErrors()
}

var (
	varyVars      = []string{"index"}
	candidateVars = []string{"index", "content", "usage", "elapsed"}
	sideEffects   = []string{"isolate", "read_only", "allow"}
	varyFields    = []string{"temperature", "max_output_tokens", "system"}
)

func (c *compiler) buildBestOfN(b *lang.Block) plan.BestOfN {
	c.require(b, "agent")
	d := plan.DefaultBestOfN()
	n := plan.BestOfN{
		Address:      b.Address(),
		Agent:        c.ref(b, "agent", "agent"),
		Candidates:   c.intv(b, "candidates", d.Candidates),
		Timeout:      c.duration(b, "timeout", d.Timeout),
		MinimumScore: c.fraction(b, "minimum_score", d.MinimumScore),
		TieTolerance: c.number(b, "tie_tolerance", d.TieTolerance),
		SideEffects:  c.enum(b, "side_effects", d.SideEffects, sideEffects...),
		Budget:       c.ref(b, "budget", "budget"),
		Range:        c.prange(b.DefRange),
	}
	if n.Candidates < 1 {
		c.errorf(b.Attrs["candidates"].Expr.Range().Ptr(), "Invalid value", "candidates must be at least 1.")
		n.Candidates = 1
	}
	n.MaxConcurrency = c.intv(b, "max_concurrency", n.Candidates)
	if n.MaxConcurrency < 1 {
		c.errorf(b.Attrs["max_concurrency"].Expr.Range().Ptr(), "Invalid value", "max_concurrency must be at least 1.")
	}
	if vb := b.One("vary"); vb != nil {
		n.Vary = map[string]plan.Expr{}
		for _, a := range lang.SortedAttrs(vb.Attrs) {
			if !checkEnum(a.Name, varyFields) {
				c.errorf(a.NameRange.Ptr(), "Unknown request field", "vary can set %s, not %q.%s", joinQuoted(varyFields), a.Name, suggest(a.Name, varyFields))
				continue
			}
			n.Vary[a.Name] = *c.deferred(a.Expr, "vary."+a.Name, varyVars...)
		}
	}
	eb, de := b.One("estimate"), d.Estimate
	n.Estimate = plan.Estimate{
		ModelCallsPerCandidate:        c.integer(eb, "model_calls_per_candidate", de.ModelCallsPerCandidate),
		TotalTokensPerCandidate:       c.integer(eb, "total_tokens_per_candidate", de.TotalTokensPerCandidate),
		CostUSDPerCandidate:           c.number(eb, "cost_usd_per_candidate", de.CostUSDPerCandidate),
		ScorerModelCallsPerCandidate:  c.integer(eb, "scorer_model_calls_per_candidate", de.ScorerModelCallsPerCandidate),
		ScorerTotalTokensPerCandidate: c.integer(eb, "scorer_total_tokens_per_candidate", de.ScorerTotalTokensPerCandidate),
		ScorerCostUSDPerCandidate:     c.number(eb, "scorer_cost_usd_per_candidate", de.ScorerCostUSDPerCandidate),
	}
	sb := b.One("scorer")
	if sb == nil {
		c.errorf(b.DefRange.Ptr(), "Missing scorer block", "A best_of_n block needs a scorer: judge = agent.NAME, expr = <expression over candidate>, or a command block.")
	} else {
		var kinds []string
		if sb.Attrs["judge"] != nil {
			kinds = append(kinds, "judge")
			n.Scorer = plan.Scorer{Kind: "judge", Judge: c.ref(sb, "judge", "agent")}
			if n.Estimate.ScorerModelCallsPerCandidate == 0 && (eb == nil || eb.Attrs["scorer_model_calls_per_candidate"] == nil) {
				n.Estimate.ScorerModelCallsPerCandidate = 1
			}
		}
		if a := sb.Attrs["expr"]; a != nil {
			kinds = append(kinds, "expr")
			n.Scorer = plan.Scorer{Kind: "expr", Expr: c.deferred(a.Expr, "scorer expr", candidateVars...)}
		}
		// Read effect and timeout whatever the method, so a value of the
		// wrong type is reported; keep them only for a command scorer.
		effect := c.enum(sb, "effect", plan.DefaultEffect, effects...)
		timeout := c.duration(sb, "timeout", plan.DefaultScorerTimeout)
		if cb := sb.One("command"); cb != nil {
			kinds = append(kinds, "command")
			if a := sb.Attrs["timeout"]; a != nil && timeout <= 0 {
				c.errorf(a.Expr.Range().Ptr(), "Invalid value", "timeout must be more than 0; leave it out for the default, %s.", plan.DefaultScorerTimeout)
				timeout = plan.DefaultScorerTimeout
			}
			n.Scorer = plan.Scorer{Kind: "command", Command: c.buildCommand(cb), Effect: effect, Timeout: timeout}
		} else {
			for _, name := range []string{"effect", "timeout"} {
				if a := sb.Attrs[name]; a != nil {
					c.errorf(a.NameRange.Ptr(), "Setting of a command scorer", "%s belongs to a scorer with a command block; a judge or an expr runs no process.", name)
				}
			}
		}
		if len(kinds) != 1 {
			c.errorf(sb.DefRange.Ptr(), "Scorer needs exactly one method", "A scorer needs exactly one of judge, expr and a command block; this one has %d.", len(kinds))
		}
	}
	n.Selector = c.buildSelector(b.One("selector"), d.Selector)
	return n
}

// buildSelector reads a best_of_n block's selector: highest_score (the
// default), majority_vote with its key, or command with its command block,
// effect and timeout.
func (c *compiler) buildSelector(selb *lang.Block, d plan.Selector) plan.Selector {
	s := plan.Selector{Kind: c.enum(selb, "kind", d.Kind, selectorKinds...)}
	if selb == nil {
		return s
	}
	if selb.Attrs["key"] != nil {
		if s.Kind != "majority_vote" {
			c.errorf(selb.Attrs["key"].NameRange.Ptr(), "Key without majority vote", "key groups candidates for kind = \"majority_vote\"; %s does not use it.", s.Kind)
		} else {
			s.Key = c.deferred(selb.Attrs["key"].Expr, "selector key", candidateVars...)
		}
	} else if s.Kind == "majority_vote" {
		// The default key: answers that differ only in surrounding space agree.
		s.Key = &plan.Expr{Source: plan.DefaultVoteKey, Range: c.prange(selb.DefRange)}
	}
	// Read whatever is there, so a value of the wrong type is reported
	// whatever the kind; then keep it only for a command selector.
	effect := c.enum(selb, "effect", plan.DefaultEffect, effects...)
	timeout := c.duration(selb, "timeout", plan.DefaultSelectorTimeout)
	cb := selb.One("command")
	if s.Kind != "command" {
		for _, name := range []string{"effect", "timeout"} {
			if a := selb.Attrs[name]; a != nil {
				c.errorf(a.NameRange.Ptr(), "Setting of a command selector", "%s belongs to kind = \"command\"; a %s selector runs no process.", name, s.Kind)
			}
		}
		if cb != nil {
			c.errorf(cb.DefRange.Ptr(), "Command without kind = \"command\"", "A command block makes a command selector: set kind = \"command\" (this selector is %s).", s.Kind)
		}
		return s
	}
	if cb == nil {
		c.errorf(selb.DefRange.Ptr(), "Missing command block", "kind = \"command\" needs a command block: command { argv = [\"./pick.sh\"] }, a process given the candidates as JSON on stdin that prints the chosen index.")
		return s
	}
	if a := selb.Attrs["timeout"]; a != nil && timeout <= 0 {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value", "timeout must be more than 0; leave it out for the default, %s.", plan.DefaultSelectorTimeout)
		timeout = plan.DefaultSelectorTimeout
	}
	s.Command, s.Effect, s.Timeout = c.buildCommand(cb), effect, timeout
	return s
}

var selectorKinds = []string{"highest_score", "majority_vote", "command"}

func joinQuoted(list []string) string {
	q := quoteAll(list)
	out := ""
	for i, s := range q {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
