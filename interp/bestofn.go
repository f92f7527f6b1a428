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
		if cb := sb.One("command"); cb != nil {
			kinds = append(kinds, "command")
			n.Scorer = plan.Scorer{Kind: "command", Command: c.buildCommand(cb)}
		}
		if len(kinds) != 1 {
			c.errorf(sb.DefRange.Ptr(), "Scorer needs exactly one method", "A scorer needs exactly one of judge, expr and a command block; this one has %d.", len(kinds))
		}
	}
	selb := b.One("selector")
	n.Selector = plan.Selector{Kind: c.enum(selb, "kind", d.Selector.Kind, "highest_score", "majority_vote")}
	if selb != nil && selb.Attrs["key"] != nil {
		if n.Selector.Kind != "majority_vote" {
			c.errorf(selb.Attrs["key"].NameRange.Ptr(), "Key without majority vote", "key groups candidates for kind = \"majority_vote\"; highest_score does not use it.")
		} else {
			n.Selector.Key = c.deferred(selb.Attrs["key"].Expr, "selector key", candidateVars...)
		}
	} else if n.Selector.Kind == "majority_vote" {
		// The default key: answers that differ only in surrounding space agree.
		n.Selector.Key = &plan.Expr{Source: plan.DefaultVoteKey, Range: c.prange(selb.DefRange)}
	}
	return n
}

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
