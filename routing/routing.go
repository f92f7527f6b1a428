package routing

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/symbi-dev/symbi/plan"
)

// Strategies a router may use.
const (
	Balanced       = "balanced"
	LowestCost     = "lowest_cost"
	HighestQuality = "highest_quality"
	LowestLatency  = "lowest_latency"
)

// Weights of the balanced strategy; they sum to 1.
const (
	BalancedQualityWeight = 0.5
	BalancedLatencyWeight = 0.25
	BalancedCostWeight    = 0.25
)

// PreferBonus is added to the preferred model's score: enough to win against
// a model that is only marginally better, not enough to override the strategy
// when another model is clearly the better fit.
const PreferBonus = 0.05

// tieTolerance absorbs floating-point noise, so two models whose scores differ
// only in the last bits are a tie that the deterministic order decides.
const tieTolerance = 1e-9

// Router is how a `router` block chooses.
type Router struct {
	Strategy       string   // balanced | lowest_cost | highest_quality | lowest_latency; empty = balanced
	Prefer         string   // a model address that gets PreferBonus
	Require        []string // capabilities every request needs, on top of the request's own
	MinimumQuality float64
}

// Requirements describe the call about to be made.
type Requirements struct {
	Capabilities          []string // tools, streaming, json: what this request needs
	EstimatedPromptTokens int64
	EstimatedOutputTokens int64
	RemainingCostUSD      float64 // what the budget has left; read only when CostLimited
	CostLimited           bool    // the budget sets max_cost_usd
}

// Candidate is a model the router may choose.
type Candidate struct {
	Address       string
	Capabilities  []string
	ContextWindow int     // tokens; 0 = not declared, so not checked
	Quality       float64 // 0..1, higher is better
	Latency       float64 // 0..1, higher is faster (the model block's latency score)
	Pricing       *plan.Pricing
}

// CandidateFromPlan is the candidate for a compiled model block.
func CandidateFromPlan(m plan.Model) Candidate {
	return Candidate{
		Address:       m.Address,
		Capabilities:  append([]string(nil), m.Capabilities...),
		ContextWindow: m.ContextWindow,
		Quality:       m.Quality,
		Latency:       m.Latency,
		Pricing:       m.Pricing,
	}
}

// RouterFromPlan is the Router for a compiled router block.
func RouterFromPlan(r plan.Router) Router {
	return Router{
		Strategy:       r.Strategy,
		Prefer:         r.Prefer,
		Require:        append([]string(nil), r.Require...),
		MinimumQuality: r.MinimumQuality,
	}
}

// CandidatesFromPlan looks up the router's models in the plan, in the order
// the router lists them.
func CandidatesFromPlan(p *plan.Plan, r plan.Router) ([]Candidate, error) {
	out := make([]Candidate, 0, len(r.Models))
	for _, addr := range r.Models {
		m := p.Model(addr)
		if m == nil {
			return nil, fmt.Errorf("%s: model %s is not in the plan", r.Address, addr)
		}
		out = append(out, CandidateFromPlan(*m))
	}
	return out, nil
}

// Rejection says why a model was not eligible.
type Rejection struct {
	Model  string `json:"model"`
	Reason string `json:"reason"`
}

// Decision is the outcome of one routing.
type Decision struct {
	Chosen           string             `json:"chosen"`
	Score            float64            `json:"score"`
	EstimatedCostUSD float64            `json:"estimated_cost_usd"` // of the chosen model; 0 when it has no pricing
	Rejected         []Rejection        `json:"rejected,omitempty"` // in candidate order
	Scores           map[string]float64 `json:"scores"`             // every eligible model's score
}

// NoModelError is Select's error when no candidate can serve the request.
type NoModelError struct {
	Rejected []Rejection
}

func (e *NoModelError) Error() string {
	if len(e.Rejected) == 0 {
		return "no model fits: the router has no models"
	}
	parts := make([]string, len(e.Rejected))
	for i, r := range e.Rejected {
		parts[i] = r.Model + ": " + r.Reason
	}
	return "no model fits: " + strings.Join(parts, "; ")
}

// ErrInvalidRouter is wrapped by errors about the router itself rather than
// the request: an unknown strategy or a model listed twice.
var ErrInvalidRouter = errors.New("invalid router")

// Select picks the model for one call. See docs/routing.md for the filters
// and the score of each strategy.
func Select(req Requirements, models []Candidate, r Router) (Decision, error) {
	strategy := r.Strategy
	if strategy == "" {
		strategy = plan.DefaultRouterStrategy
	}
	switch strategy {
	case Balanced, LowestCost, HighestQuality, LowestLatency:
	default:
		return Decision{}, fmt.Errorf("%w: unknown strategy %q (want balanced, lowest_cost, highest_quality or lowest_latency)", ErrInvalidRouter, r.Strategy)
	}
	seen := make(map[string]bool, len(models))
	for _, m := range models {
		if seen[m.Address] {
			return Decision{}, fmt.Errorf("%w: model %s is listed twice", ErrInvalidRouter, m.Address)
		}
		seen[m.Address] = true
	}

	need := union(req.Capabilities, r.Require)
	var eligible []Candidate
	d := Decision{Scores: map[string]float64{}}
	for _, m := range models {
		if reasons := rejections(m, need, req, r.MinimumQuality); len(reasons) > 0 {
			d.Rejected = append(d.Rejected, Rejection{Model: m.Address, Reason: strings.Join(reasons, "; ")})
			continue
		}
		eligible = append(eligible, m)
	}
	if len(eligible) == 0 {
		return Decision{}, &NoModelError{Rejected: d.Rejected}
	}

	costs := make([]float64, len(eligible))
	cheapest := math.Inf(1)
	for i, m := range eligible {
		costs[i] = callCost(m, req)
		if !math.IsNaN(costs[i]) {
			cheapest = math.Min(cheapest, costs[i])
		}
	}
	for i, m := range eligible {
		score := strategyScore(strategy, m, costScore(costs[i], cheapest), headroom(costs[i], req))
		if m.Address == r.Prefer {
			score += PreferBonus
		}
		d.Scores[m.Address] = score
	}

	best := 0
	for i := 1; i < len(eligible); i++ {
		if better(eligible[i].Address, eligible[best].Address, d.Scores) {
			best = i
		}
	}
	d.Chosen = eligible[best].Address
	d.Score = d.Scores[d.Chosen]
	if !math.IsNaN(costs[best]) {
		d.EstimatedCostUSD = costs[best]
	}
	return d, nil
}

// better orders models by score, then by address, so the choice never
// depends on the order the router lists its models in. The preferred model
// needs no rule here: its bonus already lifts it out of any tie.
func better(a, b string, scores map[string]float64) bool {
	if diff := scores[a] - scores[b]; math.Abs(diff) > tieTolerance {
		return diff > 0
	}
	return a < b
}

// rejections lists every reason m cannot serve the request, in a fixed order.
func rejections(m Candidate, need []string, req Requirements, minQuality float64) []string {
	var reasons []string
	if missing := difference(need, m.Capabilities); len(missing) > 0 {
		reasons = append(reasons, fmt.Sprintf("missing capability %s", strings.Join(quoteAll(missing), ", ")))
	}
	if want := req.EstimatedPromptTokens + req.EstimatedOutputTokens; m.ContextWindow > 0 && want > int64(m.ContextWindow) {
		reasons = append(reasons, fmt.Sprintf("context window of %d tokens is smaller than the estimated %d (%d prompt + %d output)",
			m.ContextWindow, want, req.EstimatedPromptTokens, req.EstimatedOutputTokens))
	}
	if req.CostLimited {
		switch c := callCost(m, req); {
		case math.IsNaN(c):
			reasons = append(reasons, "no pricing, and the budget limits cost")
		case c > req.RemainingCostUSD:
			reasons = append(reasons, fmt.Sprintf("estimated cost $%.6f is over the remaining budget of $%.6f", c, math.Max(req.RemainingCostUSD, 0)))
		}
	}
	if m.Quality < minQuality {
		reasons = append(reasons, fmt.Sprintf("quality %g is below the minimum %g", m.Quality, minQuality))
	}
	return reasons
}

// callCost is the estimated USD cost of the call on m, NaN when m has no
// pricing (its cost is unknown, not zero).
func callCost(m Candidate, req Requirements) float64 {
	if m.Pricing == nil {
		return math.NaN()
	}
	return (float64(max(req.EstimatedPromptTokens, 0))*m.Pricing.InputUSDPerMTok +
		float64(max(req.EstimatedOutputTokens, 0))*m.Pricing.OutputUSDPerMTok) / 1e6
}

// costScore is cheapest/cost: 1 for the cheapest eligible model, ½ for one
// twice as expensive. An unpriced model scores 0: lowest_cost never prefers a
// price it cannot see.
func costScore(cost, cheapest float64) float64 {
	switch {
	case math.IsNaN(cost):
		return 0
	case cost <= 0:
		return 1
	case math.IsInf(cheapest, 1):
		return 0
	}
	return cheapest / cost
}

// headroom is the balanced strategy's resource awareness: a call that would
// spend a share s of the remaining budget keeps 1 − s/2 of its score, so as
// the budget runs down later calls drift to cheaper models.
func headroom(cost float64, req Requirements) float64 {
	if !req.CostLimited || math.IsNaN(cost) || cost <= 0 {
		return 1
	}
	if req.RemainingCostUSD <= 0 {
		return 0.5
	}
	return 1 - math.Min(cost/req.RemainingCostUSD, 1)/2
}

func strategyScore(strategy string, m Candidate, cost, headroom float64) float64 {
	q, l := clamp01(m.Quality), clamp01(m.Latency)
	switch strategy {
	case LowestCost:
		return cost
	case HighestQuality:
		return q
	case LowestLatency:
		return l
	}
	return (BalancedQualityWeight*q + BalancedLatencyWeight*l + BalancedCostWeight*cost) * headroom
}

func clamp01(x float64) float64 {
	switch {
	case !(x > 0): // also NaN
		return 0
	case x > 1:
		return 1
	}
	return x
}

func union(a, b []string) []string {
	set := map[string]bool{}
	for _, s := range append(append([]string(nil), a...), b...) {
		if s != "" {
			set[s] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// difference is what of need has does not have, in need's (sorted) order.
func difference(need, has []string) []string {
	got := map[string]bool{}
	for _, h := range has {
		got[h] = true
	}
	var out []string
	for _, n := range need {
		if !got[n] {
			out = append(out, n)
		}
	}
	return out
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
