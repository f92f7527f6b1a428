package budget

import (
	"math"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// Usage is what a run has consumed. It is also the shape of a reservation
// still in flight (Accountant.Reserved).
type Usage struct {
	Iterations         int64         `json:"iterations"`
	ModelCalls         int64         `json:"model_calls"`
	ToolCalls          int64         `json:"tool_calls"`
	ToolRounds         int64         `json:"tool_rounds"`
	ReflectionAttempts int64         `json:"reflection_attempts"`
	PlanSteps          int64         `json:"plan_steps"`
	PromptTokens       int64         `json:"prompt_tokens"`
	CompletionTokens   int64         `json:"completion_tokens"`
	TotalTokens        int64         `json:"total_tokens"`
	CostUSD            float64       `json:"cost_usd"`
	Elapsed            time.Duration `json:"elapsed_ns"`
}

// Amount is an amount of budget in the units a run reports: model and tool
// calls, tokens and USD. A run's result, the journal's usage objects and
// best-of-N candidates' usage are Amounts; policies see one as the input's run.usage
// (policy.Usage, the same fields).
type Amount struct {
	ModelCalls       int64   `json:"model_calls"`
	ToolCalls        int64   `json:"tool_calls"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// Amount is the part of the usage that runs report.
func (u Usage) Amount() Amount {
	return Amount{
		ModelCalls:       u.ModelCalls,
		ToolCalls:        u.ToolCalls,
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CostUSD:          u.CostUSD,
	}
}

// add returns u+v, saturating each count, and whether any count saturated.
func (u Usage) add(v Usage) (Usage, bool) {
	var over bool
	f := func(a, b int64) int64 {
		s, o := satAdd(a, b)
		over = over || o
		return s
	}
	return Usage{
		Iterations:         f(u.Iterations, v.Iterations),
		ModelCalls:         f(u.ModelCalls, v.ModelCalls),
		ToolCalls:          f(u.ToolCalls, v.ToolCalls),
		ToolRounds:         f(u.ToolRounds, v.ToolRounds),
		ReflectionAttempts: f(u.ReflectionAttempts, v.ReflectionAttempts),
		PlanSteps:          f(u.PlanSteps, v.PlanSteps),
		PromptTokens:       f(u.PromptTokens, v.PromptTokens),
		CompletionTokens:   f(u.CompletionTokens, v.CompletionTokens),
		TotalTokens:        f(u.TotalTokens, v.TotalTokens),
		CostUSD:            u.CostUSD + v.CostUSD,
		Elapsed:            u.Elapsed + v.Elapsed,
	}, over
}

// sub removes a reservation; reservations only ever hold what was added,
// so the result is never negative.
func (u Usage) sub(v Usage) Usage {
	f := func(a, b int64) int64 { return max(a-b, 0) }
	return Usage{
		Iterations:         f(u.Iterations, v.Iterations),
		ModelCalls:         f(u.ModelCalls, v.ModelCalls),
		ToolCalls:          f(u.ToolCalls, v.ToolCalls),
		ToolRounds:         f(u.ToolRounds, v.ToolRounds),
		ReflectionAttempts: f(u.ReflectionAttempts, v.ReflectionAttempts),
		PlanSteps:          f(u.PlanSteps, v.PlanSteps),
		PromptTokens:       f(u.PromptTokens, v.PromptTokens),
		CompletionTokens:   f(u.CompletionTokens, v.CompletionTokens),
		TotalTokens:        f(u.TotalTokens, v.TotalTokens),
		CostUSD:            max(u.CostUSD-v.CostUSD, 0),
	}
}

// count is the counter a limit counts, 0 for one that is not a count.
func (u Usage) count(limit string) int64 {
	switch limit {
	case MaxIterations:
		return u.Iterations
	case MaxModelCalls:
		return u.ModelCalls
	case MaxToolCalls:
		return u.ToolCalls
	case MaxToolRounds:
		return u.ToolRounds
	case MaxReflectionAttempts:
		return u.ReflectionAttempts
	case MaxPlanSteps:
		return u.PlanSteps
	case MaxPromptTokens:
		return u.PromptTokens
	case MaxCompletionTokens:
		return u.CompletionTokens
	case MaxTotalTokens:
		return u.TotalTokens
	}
	return 0
}

// satAdd adds two non-negative counts, stopping at math.MaxInt64.
func satAdd(a, b int64) (int64, bool) {
	if b > math.MaxInt64-a {
		return math.MaxInt64, true
	}
	return a + b, false
}

// Unlimited is the value Remaining gives for a limit that is not set.
const Unlimited = -1

// Remaining is how much of each limit is left after what was used and what
// is reserved by calls in flight; Unlimited (-1) where there is no limit.
type Remaining struct {
	Iterations         int64
	ModelCalls         int64
	ToolCalls          int64
	ToolRounds         int64
	ReflectionAttempts int64
	PlanSteps          int64
	PromptTokens       int64
	CompletionTokens   int64
	TotalTokens        int64
	CostUSD            float64
	Time               time.Duration
}

// Cost is the USD price of a call: tokens times the price per million. A
// nil pricing costs nothing.
func Cost(pricing *plan.Pricing, prompt, completion int64) float64 {
	if pricing == nil {
		return 0
	}
	return float64(prompt)*pricing.InputUSDPerMTok/1e6 + float64(completion)*pricing.OutputUSDPerMTok/1e6
}

// CallCost is the USD price of a call as the provider reported it: the
// prompt's cache reads and writes at their own prices where the pricing
// sets them (as input tokens where it does not), the rest of the prompt at
// the input price, the completion at the output price. Cache counts are
// held within the prompt, so a malformed report cannot price more tokens
// than the prompt has.
func CallCost(pricing *plan.Pricing, u provider.Usage) float64 {
	if pricing == nil {
		return 0
	}
	prompt := max(u.PromptTokens, 0)
	read := min(max(u.CacheReadTokens, 0), prompt)
	write := min(max(u.CacheWriteTokens, 0), prompt-read)
	readPrice, writePrice := pricing.InputUSDPerMTok, pricing.InputUSDPerMTok
	if p := pricing.CacheReadUSDPerMTok; p != nil {
		readPrice = *p
	}
	if p := pricing.CacheWriteUSDPerMTok; p != nil {
		writePrice = *p
	}
	return (float64(prompt-read-write)*pricing.InputUSDPerMTok + float64(read)*readPrice + float64(write)*writePrice +
		float64(max(u.CompletionTokens, 0))*pricing.OutputUSDPerMTok) / 1e6
}

func validCost(c float64) bool { return c >= 0 && !math.IsInf(c, 0) && !math.IsNaN(c) }
