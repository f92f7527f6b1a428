package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limit names, as the budget block spells them. Exceeded.Limit is one of
// these.
const (
	MaxIterations         = "max_iterations"
	MaxModelCalls         = "max_model_calls"
	MaxToolCalls          = "max_tool_calls"
	MaxToolRounds         = "max_tool_rounds"
	MaxReflectionAttempts = "max_reflection_attempts"
	MaxPlanSteps          = "max_plan_steps"
	MaxPromptTokens       = "max_prompt_tokens"
	MaxCompletionTokens   = "max_completion_tokens"
	MaxTotalTokens        = "max_total_tokens"
	MaxCostUSD            = "max_cost_usd"
	Timeout               = "timeout"
	// MaxOutputTokens is not a budget field but the call's own
	// max_output_tokens, which a streamed answer ran past
	// (Reservation.Streamed).
	MaxOutputTokens = "max_output_tokens"
)

// Exceeded is a budget limit that was hit. Test for it with errors.As, or
// with errors.Is(err, &Exceeded{Limit: budget.MaxTotalTokens}) for one limit
// (an empty Limit matches any).
type Exceeded struct {
	Limit string
	Max   float64 // the limit; seconds for timeout
	Used  float64 // seconds for timeout
	// Preflight is set when the limit refused something before it happened:
	// Used is then what usage would have become, not what it is.
	Preflight bool
}

func (e *Exceeded) Error() string {
	verb := "used"
	if e.Preflight {
		verb = "would use"
	}
	return fmt.Sprintf("budget exceeded: %s (limit %s, %s %s)", e.Limit, e.format(e.Max), verb, e.format(e.Used))
}

func (e *Exceeded) format(v float64) string {
	switch e.Limit {
	case Timeout:
		return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
	case MaxCostUSD:
		return "$" + strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func (e *Exceeded) Is(target error) bool {
	t, ok := target.(*Exceeded)
	return ok && (t.Limit == "" || t.Limit == e.Limit)
}

// ErrInvalidUsage is wrapped by the error for usage that cannot be counted:
// a negative, NaN or infinite cost (from bad pricing), or a count that
// would overflow. It is a budget failure like Exceeded, and as sticky.
var ErrInvalidUsage = errors.New("budget: invalid usage")

// ErrUnpriced is returned by ReserveModelCall when max_cost_usd is set and
// the model has no pricing: its cost could not be bounded. Unlike budget
// errors it is not sticky; another model may be priced.
var ErrUnpriced = errors.New("budget: max_cost_usd is set but the model has no pricing")

// ErrZeroEstimate is wrapped by PreflightBestOfN's error when a limit is
// set but the estimate it would be checked against is zero, which would let
// N candidates spend N times the intended budget unchecked. The error is a
// *ZeroEstimateError, which says which limit and which estimates.
var ErrZeroEstimate = errors.New("budget: best-of-N estimate is zero for a set limit")

// ZeroEstimateError is PreflightBestOfN's error for a set limit whose
// estimate is zero. It wraps ErrZeroEstimate.
type ZeroEstimateError struct {
	Limit     string   // the budget field that is set: max_total_tokens, …
	Estimates []string // the estimate fields whose sum is zero
}

func (e *ZeroEstimateError) Error() string {
	return fmt.Sprintf("%v: %s is set, so estimate %s must be more than 0", ErrZeroEstimate, e.Limit, strings.Join(e.Estimates, " + "))
}

func (e *ZeroEstimateError) Unwrap() error { return ErrZeroEstimate }
