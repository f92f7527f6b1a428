package bestofn

import (
	"errors"
	"math"
	"sort"
	"time"

	"github.com/symbi-dev/symbi/budget"
)

// Status says how far one best-of-N candidate got. Each way a
// candidate can drop out is its own status, so a reviewer can tell a weak
// answer (rejected) from one that never had a chance (skipped, budget_exceeded).
type Status string

const (
	// Eligible: generated, scored, accepted and at or above minimum_score.
	Eligible Status = "eligible"
	// Rejected: scored below minimum_score, or the scorer did not accept it.
	Rejected Status = "rejected"
	// GenerationFailed: the candidate's run ended without an answer.
	GenerationFailed Status = "generation_failed"
	// ScoringFailed: the scorer (or the selector key) failed on this candidate.
	ScoringFailed Status = "scoring_failed"
	// BudgetExceeded: the shared best-of-N budget ran out while this
	// candidate was running or about to be scored.
	BudgetExceeded Status = "budget_exceeded"
	// SideEffectBlocked: the candidate proposed an action its
	// side_effects mode forbids (any tool call under isolate, a write under read_only).
	SideEffectBlocked Status = "side_effect_blocked"
	// Cancelled: the caller cancelled the run while this candidate was in
	// flight, or something other than the budget stopped the block (the
	// gate denied its command scorer).
	Cancelled Status = "cancelled"
	// TimedOut: the best-of-N deadline passed while this candidate was in flight.
	TimedOut Status = "timed_out"
	// Skipped: the candidate never started, because the run stopped first.
	Skipped Status = "skipped"
)

// Candidate is one best-of-N candidate, reported in index order whatever the
// order in which candidates finished.
type Candidate struct {
	Index  int    `json:"index"`
	Status Status `json:"status"`
	// Score is the scorer's value in [0, 1]; meaningful when Scored.
	Score     float64 `json:"score"`
	Scored    bool    `json:"scored"`
	Rationale string  `json:"rationale,omitempty"`
	// Key is the majority_vote key's value, as text.
	Key     string `json:"key,omitempty"`
	Content string `json:"content,omitempty"`
	// Usage is what generating the candidate cost; ScorerUsage what scoring it cost.
	// Selection compares their sum, the candidate's accounted usage.
	Usage       budget.Amount `json:"usage"`
	ScorerUsage budget.Amount `json:"scorer_usage"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	// Termination is the candidate run's own termination reason, and
	// Iterations its loop iterations.
	Termination string `json:"termination,omitempty"`
	Iterations  int    `json:"iterations,omitempty"`
	Error       error  `json:"-"`
}

// AccountedUsage is generation plus scoring: what the candidate cost the
// shared budget.
func (c *Candidate) AccountedUsage() budget.Amount {
	return addUsage(c.Usage, c.ScorerUsage)
}

// ErrNoEligibleCandidate is returned when every candidate was rejected or failed.
var ErrNoEligibleCandidate = errors.New("best-of-N: no eligible candidate")

// Select applies the selector to cs (in index order) and returns the
// position of the selected candidate, or ErrNoEligibleCandidate. Only eligible
// candidates take part.
func Select(kind string, cs []Candidate, tieTolerance float64) (int, error) {
	var eligible []int
	for i := range cs {
		if cs[i].Status == Eligible {
			eligible = append(eligible, i)
		}
	}
	if len(eligible) == 0 {
		return -1, ErrNoEligibleCandidate
	}
	switch kind {
	case "majority_vote":
		return selectMajority(cs, eligible, tieTolerance), nil
	default: // "highest_score"; the compiler rejects other kinds
		return selectHighest(cs, eligible, tieTolerance), nil
	}
}

// selectHighest picks the highest score. Scores within tieTolerance of the
// best are a tie, broken by lower accounted cost, then fewer accounted
// tokens, then lower index (per Wuwe). The band is measured from the best
// score so that the outcome does not depend on the order of comparison.
func selectHighest(cs []Candidate, among []int, tieTolerance float64) int {
	if tieTolerance < 0 || math.IsNaN(tieTolerance) {
		tieTolerance = 0
	}
	best := math.Inf(-1)
	for _, i := range among {
		best = math.Max(best, cs[i].Score)
	}
	var tied []int
	for _, i := range among {
		if cs[i].Score >= best-tieTolerance {
			tied = append(tied, i)
		}
	}
	sort.SliceStable(tied, func(a, b int) bool {
		ua, ub := cs[tied[a]].AccountedUsage(), cs[tied[b]].AccountedUsage()
		if ua.CostUSD != ub.CostUSD {
			return ua.CostUSD < ub.CostUSD
		}
		if ua.TotalTokens != ub.TotalTokens {
			return ua.TotalTokens < ub.TotalTokens
		}
		return cs[tied[a]].Index < cs[tied[b]].Index
	})
	return tied[0]
}

// selectMajority groups eligible candidates by Key. The largest group wins;
// equal sizes go to the higher total score, then to the group whose first
// member has the lower index. Within the winning group the representative is
// chosen by the highest_score rule, so the answer returned is the best-scored
// member of the majority.
func selectMajority(cs []Candidate, among []int, tieTolerance float64) int {
	type group struct {
		members []int
		total   float64
		first   int
	}
	byKey := map[string]*group{}
	var order []*group
	for _, i := range among {
		g := byKey[cs[i].Key]
		if g == nil {
			g = &group{first: cs[i].Index}
			byKey[cs[i].Key] = g
			order = append(order, g)
		}
		g.members = append(g.members, i)
		g.total += cs[i].Score
		g.first = min(g.first, cs[i].Index)
	}
	win := order[0]
	for _, g := range order[1:] {
		switch {
		case len(g.members) != len(win.members):
			if len(g.members) > len(win.members) {
				win = g
			}
		case g.total != win.total:
			if g.total > win.total {
				win = g
			}
		case g.first < win.first:
			win = g
		}
	}
	return selectHighest(cs, win.members, tieTolerance)
}

// addUsage adds saturating: accounting never wraps around to reopen capacity.
func addUsage(a, b budget.Amount) budget.Amount {
	return budget.Amount{
		ModelCalls:       satAdd(a.ModelCalls, b.ModelCalls),
		ToolCalls:        satAdd(a.ToolCalls, b.ToolCalls),
		PromptTokens:     satAdd(a.PromptTokens, b.PromptTokens),
		CompletionTokens: satAdd(a.CompletionTokens, b.CompletionTokens),
		TotalTokens:      satAdd(a.TotalTokens, b.TotalTokens),
		CostUSD:          a.CostUSD + b.CostUSD,
	}
}

func satAdd(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	return s
}
