package routing

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/symbi-dev/symbi/plan"
)

var (
	fast = Candidate{Address: "model.fast", Capabilities: []string{"tools", "streaming", "json"}, ContextWindow: 128000,
		Quality: 0.6, Latency: 0.9, Pricing: &plan.Pricing{InputUSDPerMTok: 0.15, OutputUSDPerMTok: 0.60}}
	large = Candidate{Address: "model.large", Capabilities: []string{"tools", "streaming", "json"}, ContextWindow: 128000,
		Quality: 0.95, Latency: 0.4, Pricing: &plan.Pricing{InputUSDPerMTok: 2.5, OutputUSDPerMTok: 10}}
	local = Candidate{Address: "model.local", Capabilities: []string{"streaming"}, ContextWindow: 8192,
		Quality: 0.5, Latency: 0.6}

	// 1000 prompt + 500 output tokens: fast costs $0.00045, large $0.0075, local is unpriced.
	call = Requirements{EstimatedPromptTokens: 1000, EstimatedOutputTokens: 500}
)

var approx = cmpopts.EquateApprox(0, 1e-12)

func TestStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		want     string
		scores   map[string]float64
	}{
		{LowestCost, "model.fast", map[string]float64{"model.fast": 1, "model.large": 0.00045 / 0.0075, "model.local": 0}},
		{HighestQuality, "model.large", map[string]float64{"model.fast": 0.6, "model.large": 0.95, "model.local": 0.5}},
		{LowestLatency, "model.fast", map[string]float64{"model.fast": 0.9, "model.large": 0.4, "model.local": 0.6}},
		{Balanced, "model.fast", map[string]float64{
			"model.fast":  0.5*0.6 + 0.25*0.9 + 0.25*1,
			"model.large": 0.5*0.95 + 0.25*0.4 + 0.25*(0.00045/0.0075),
			"model.local": 0.5*0.5 + 0.25*0.6 + 0,
		}},
		{"", "model.fast", nil}, // empty strategy is balanced
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			d, err := Select(call, []Candidate{local, large, fast}, Router{Strategy: tc.strategy})
			if err != nil {
				t.Fatal(err)
			}
			if d.Chosen != tc.want {
				t.Errorf("chose %s, want %s (scores %v)", d.Chosen, tc.want, d.Scores)
			}
			if tc.scores != nil {
				if diff := cmp.Diff(tc.scores, d.Scores, approx); diff != "" {
					t.Errorf("scores (-want +got):\n%s", diff)
				}
			}
			if d.Score != d.Scores[d.Chosen] || len(d.Rejected) != 0 {
				t.Errorf("decision %+v is inconsistent", d)
			}
		})
	}
}

func TestRejections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    Requirements
		router Router
		want   []Rejection
	}{
		{
			name:   "missing capability from the request and the router",
			req:    Requirements{Capabilities: []string{"tools"}},
			router: Router{Require: []string{"json"}},
			want:   []Rejection{{"model.local", `missing capability "json", "tools"`}},
		},
		{
			name: "context window too small",
			req:  Requirements{EstimatedPromptTokens: 8000, EstimatedOutputTokens: 512},
			want: []Rejection{{"model.local", "context window of 8192 tokens is smaller than the estimated 8512 (8000 prompt + 512 output)"}},
		},
		{
			name: "cost over the remaining budget, and no pricing under a cost limit",
			req:  Requirements{EstimatedPromptTokens: 1000, EstimatedOutputTokens: 500, CostLimited: true, RemainingCostUSD: 0.001},
			want: []Rejection{
				{"model.local", "no pricing, and the budget limits cost"},
				{"model.large", "estimated cost $0.007500 is over the remaining budget of $0.001000"},
			},
		},
		{
			name:   "quality below the minimum",
			router: Router{MinimumQuality: 0.55},
			want:   []Rejection{{"model.local", "quality 0.5 is below the minimum 0.55"}},
		},
		{
			name: "every reason of one model at once",
			req: Requirements{Capabilities: []string{"tools"}, EstimatedPromptTokens: 9000, EstimatedOutputTokens: 1000,
				CostLimited: true, RemainingCostUSD: 1},
			router: Router{MinimumQuality: 0.55},
			want:   []Rejection{{"model.local", `missing capability "tools"; context window of 8192 tokens is smaller than the estimated 10000 (9000 prompt + 1000 output); no pricing, and the budget limits cost; quality 0.5 is below the minimum 0.55`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Select(tc.req, []Candidate{local, large, fast}, tc.router)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, d.Rejected); diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
			for _, r := range d.Rejected {
				if _, ok := d.Scores[r.Model]; ok || d.Chosen == r.Model {
					t.Errorf("rejected model %s was scored or chosen", r.Model)
				}
			}
		})
	}
}

func TestNoModelFits(t *testing.T) {
	_, err := Select(Requirements{Capabilities: []string{"vision"}}, []Candidate{fast, local}, Router{})
	var nm *NoModelError
	if !errors.As(err, &nm) {
		t.Fatalf("err = %v, want *NoModelError", err)
	}
	want := []Rejection{{"model.fast", `missing capability "vision"`}, {"model.local", `missing capability "vision"`}}
	if diff := cmp.Diff(want, nm.Rejected); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), `model.fast: missing capability "vision"`) {
		t.Errorf("error %q does not say why", err)
	}
	if _, err := Select(call, nil, Router{}); !errors.As(err, &nm) || !strings.Contains(err.Error(), "no models") {
		t.Errorf("no candidates: err = %v", err)
	}
}

func TestPrefer(t *testing.T) {
	// Within PreferBonus of the best, the preferred model wins.
	d, err := Select(call, []Candidate{fast, large}, Router{Strategy: HighestQuality, Prefer: "model.large"})
	if err != nil || d.Chosen != "model.large" || math.Abs(d.Score-(0.95+PreferBonus)) > 1e-12 {
		t.Fatalf("prefer the best: %+v, %v", d, err)
	}
	near := fast
	near.Address, near.Quality = "model.near", 0.93
	d, err = Select(call, []Candidate{large, near}, Router{Strategy: HighestQuality, Prefer: "model.near"})
	if err != nil || d.Chosen != "model.near" {
		t.Fatalf("prefer a near-best model: %+v, %v", d, err)
	}
	// A clearly better model still wins over the preferred one.
	d, err = Select(call, []Candidate{fast, large}, Router{Strategy: HighestQuality, Prefer: "model.fast"})
	if err != nil || d.Chosen != "model.large" {
		t.Fatalf("prefer must not override a clear winner: %+v, %v", d, err)
	}
	// A preferred model that is rejected is not chosen.
	d, err = Select(Requirements{Capabilities: []string{"tools"}}, []Candidate{fast, local}, Router{Prefer: "model.local"})
	if err != nil || d.Chosen != "model.fast" {
		t.Fatalf("rejected preferred model: %+v, %v", d, err)
	}
}

func TestTiesAreDeterministic(t *testing.T) {
	a := Candidate{Address: "model.a", Quality: 0.7}
	b := Candidate{Address: "model.b", Quality: 0.7}
	c := Candidate{Address: "model.c", Quality: 0.7}
	for _, order := range [][]Candidate{{a, b, c}, {c, b, a}, {b, c, a}} {
		d, err := Select(Requirements{}, order, Router{Strategy: HighestQuality})
		if err != nil || d.Chosen != "model.a" {
			t.Fatalf("order %v: chose %s (%v), want model.a by address", order, d.Chosen, err)
		}
	}
	// The preferred model's bonus decides an otherwise exact tie.
	d, err := Select(Requirements{}, []Candidate{a, b}, Router{Strategy: HighestQuality, Prefer: "model.b"})
	if err != nil || d.Chosen != "model.b" {
		t.Fatalf("tie with prefer: chose %s (%v), want model.b", d.Chosen, err)
	}
}

func TestBalancedMovesToCheaperModelsAsTheBudgetRunsDown(t *testing.T) {
	premium := Candidate{Address: "model.premium", Quality: 0.99, Latency: 0.8, Pricing: &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 1}}
	budget := Candidate{Address: "model.budget", Quality: 0.7, Latency: 0.8, Pricing: &plan.Pricing{InputUSDPerMTok: 0.5, OutputUSDPerMTok: 0.5}}
	// 1000 + 1000 tokens: premium $0.002, budget $0.001.
	req := Requirements{EstimatedPromptTokens: 1000, EstimatedOutputTokens: 1000, CostLimited: true}
	for _, tc := range []struct {
		remaining float64
		want      string
	}{
		{1, "model.premium"},
		{0.0025, "model.budget"},
	} {
		req.RemainingCostUSD = tc.remaining
		d, err := Select(req, []Candidate{premium, budget}, Router{Strategy: Balanced})
		if err != nil || d.Chosen != tc.want {
			t.Errorf("remaining $%v: chose %s (%v, scores %v), want %s", tc.remaining, d.Chosen, err, d.Scores, tc.want)
		}
	}
	req.RemainingCostUSD = 0.0025
	d, _ := Select(req, []Candidate{premium, budget}, Router{})
	want := map[string]float64{
		"model.premium": (0.5*0.99 + 0.25*0.8 + 0.25*0.5) * (1 - 0.8/2),
		"model.budget":  (0.5*0.7 + 0.25*0.8 + 0.25*1) * (1 - 0.4/2),
	}
	if diff := cmp.Diff(want, d.Scores, approx); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
	if math.Abs(d.EstimatedCostUSD-0.001) > 1e-15 {
		t.Errorf("EstimatedCostUSD = %v, want 0.001", d.EstimatedCostUSD)
	}
}

func TestInvalidRouter(t *testing.T) {
	if _, err := Select(call, []Candidate{fast}, Router{Strategy: "cheapest"}); !errors.Is(err, ErrInvalidRouter) {
		t.Errorf("unknown strategy: err = %v", err)
	}
	if _, err := Select(call, []Candidate{fast, fast}, Router{}); !errors.Is(err, ErrInvalidRouter) {
		t.Errorf("duplicate model: err = %v", err)
	}
}

func TestFromPlan(t *testing.T) {
	p := &plan.Plan{Models: []plan.Model{
		{Address: "model.fast", Capabilities: []string{"tools"}, ContextWindow: 1000, Quality: 0.6, Latency: 0.9,
			Pricing: &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 2}},
		{Address: "model.large", Quality: 0.9},
	}}
	r := plan.Router{Address: "router.r", Strategy: LowestCost, Models: []string{"model.large", "model.fast"},
		Prefer: "model.fast", Require: []string{"tools"}, MinimumQuality: 0.5}
	got, err := CandidatesFromPlan(p, r)
	if err != nil {
		t.Fatal(err)
	}
	want := []Candidate{
		{Address: "model.large", Quality: 0.9, Capabilities: []string{}},
		{Address: "model.fast", Capabilities: []string{"tools"}, ContextWindow: 1000, Quality: 0.6, Latency: 0.9,
			Pricing: &plan.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 2}},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Router{Strategy: LowestCost, Prefer: "model.fast", Require: []string{"tools"}, MinimumQuality: 0.5}, RouterFromPlan(r)); diff != "" {
		t.Errorf("router (-want +got):\n%s", diff)
	}
	r.Models = append(r.Models, "model.gone")
	if _, err := CandidatesFromPlan(p, r); err == nil || !strings.Contains(err.Error(), "model.gone") {
		t.Errorf("missing model: err = %v", err)
	}
}
