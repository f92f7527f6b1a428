package budget

import (
	"errors"
	"math"
	"testing"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

func price(v float64) *float64 { return &v }

// Prompt tokens read from or written to the provider's cache are priced
// apart when the pricing says how, as input tokens when it does not; a
// report whose cache counts pass the prompt prices no more than the prompt.
func TestCallCostPricesTheCacheApart(t *testing.T) {
	p := &plan.Pricing{InputUSDPerMTok: 3, OutputUSDPerMTok: 15, CacheReadUSDPerMTok: price(0.3), CacheWriteUSDPerMTok: price(3.75)}
	for _, tc := range []struct {
		name    string
		pricing *plan.Pricing
		usage   provider.Usage
		want    float64
	}{
		{"no_cache", p, provider.Usage{PromptTokens: 1e6, CompletionTokens: 1e6}, 3 + 15},
		{"read_and_write", p, provider.Usage{PromptTokens: 1e6, CompletionTokens: 0, CacheReadTokens: 500_000, CacheWriteTokens: 200_000}, 0.3*3 + 0.15 + 0.75},
		{"unpriced_cache_is_input", &plan.Pricing{InputUSDPerMTok: 3, OutputUSDPerMTok: 15}, provider.Usage{PromptTokens: 1e6, CacheReadTokens: 1e6}, 3},
		{"counts_past_the_prompt", p, provider.Usage{PromptTokens: 1e6, CacheReadTokens: 2e6, CacheWriteTokens: 2e6}, 0.3},
		{"negative_counts", p, provider.Usage{PromptTokens: 1e6, CacheReadTokens: -5, CompletionTokens: -1}, 3},
		{"no_pricing", nil, provider.Usage{PromptTokens: 1e6}, 0},
	} {
		if got := CallCost(tc.pricing, tc.usage); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: CallCost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A committed call is accounted at the cache's prices, so a run whose
// prompt is mostly cached is not charged as if none were.
func TestCommitPricesCacheTokens(t *testing.T) {
	p := &plan.Pricing{InputUSDPerMTok: 1e6, OutputUSDPerMTok: 1e6, CacheReadUSDPerMTok: price(1e5)} // $1, $1, $0.10 a token
	a, _ := newAt(plan.Budget{MaxCostUSD: 100})
	r, _, err := a.ReserveModelCall(50, 10, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(provider.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60, CacheReadTokens: 40}, true); err != nil {
		t.Fatal(err)
	}
	// 10 uncached at $1, 40 read at $0.10, 10 out at $1.
	if got := a.Usage().CostUSD; math.Abs(got-24) > 1e-9 {
		t.Errorf("cost = %v, want 24", got)
	}
}

func TestInvalidCachePrice(t *testing.T) {
	for _, p := range []*plan.Pricing{
		{CacheReadUSDPerMTok: price(-1)},
		{CacheWriteUSDPerMTok: price(math.NaN())},
	} {
		a := New(plan.Budget{})
		if _, _, err := a.ReserveModelCall(10, 10, p); !errors.Is(err, ErrInvalidUsage) {
			t.Errorf("pricing %+v: %v", *p, err)
		}
	}
}
