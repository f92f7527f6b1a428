package engine

import (
	"errors"
	"testing"

	"github.com/symbi-dev/symbi/budget"
)

func bonEligible(index int, score float64, cost float64, tokens int64, key string) Candidate {
	return Candidate{
		Index: index, Status: StatusEligible, Score: score, Scored: true, Key: key,
		Usage: budget.Amount{CostUSD: cost, TotalTokens: tokens},
	}
}

func TestBestOfNSelectHighestScore(t *testing.T) {
	tests := []struct {
		name string
		tol  float64
		cs   []Candidate
		want int
	}{
		{
			name: "clear winner",
			cs:   []Candidate{bonEligible(0, 0.5, 0, 10, ""), bonEligible(1, 0.9, 0, 10, ""), bonEligible(2, 0.7, 0, 10, "")},
			want: 1,
		},
		{
			name: "tie broken by lower cost",
			tol:  0.01,
			cs:   []Candidate{bonEligible(0, 0.9, 0.02, 10, ""), bonEligible(1, 0.895, 0.01, 50, ""), bonEligible(2, 0.5, 0, 1, "")},
			want: 1,
		},
		{
			name: "equal cost broken by fewer tokens",
			tol:  0.01,
			cs:   []Candidate{bonEligible(0, 0.9, 0.01, 30, ""), bonEligible(1, 0.9, 0.01, 20, "")},
			want: 1,
		},
		{
			name: "all equal broken by lower index",
			cs:   []Candidate{bonEligible(0, 0.9, 0.01, 30, ""), bonEligible(1, 0.9, 0.01, 30, "")},
			want: 0,
		},
		{
			name: "outside tolerance the cheaper one loses",
			tol:  1e-9,
			cs:   []Candidate{bonEligible(0, 0.9, 0.05, 30, ""), bonEligible(1, 0.89, 0.0, 1, "")},
			want: 0,
		},
		{
			name: "scorer usage counts toward cost",
			tol:  0.1,
			cs: []Candidate{
				func() Candidate { c := bonEligible(0, 0.9, 0.01, 10, ""); c.ScorerUsage.CostUSD = 0.05; return c }(),
				bonEligible(1, 0.9, 0.02, 10, ""),
			},
			want: 1,
		},
		{
			name: "ineligible candidates never win",
			cs: []Candidate{
				{Index: 0, Status: StatusRejected, Score: 1, Scored: true},
				{Index: 1, Status: StatusScoringFailed},
				bonEligible(2, 0.2, 0, 0, ""),
			},
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := selectCandidate("highest_score", tt.cs, tt.tol)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("selected %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBestOfNSelectMajorityVote(t *testing.T) {
	tests := []struct {
		name string
		cs   []Candidate
		want int
	}{
		{
			name: "largest group wins over a higher single score",
			cs: []Candidate{
				bonEligible(0, 1.0, 0, 0, "43"),
				bonEligible(1, 0.6, 0, 0, "42"),
				bonEligible(2, 0.5, 0, 0, "42"),
			},
			want: 1,
		},
		{
			name: "equal groups broken by total score",
			cs: []Candidate{
				bonEligible(0, 0.5, 0, 0, "a"),
				bonEligible(1, 0.9, 0, 0, "b"),
				bonEligible(2, 0.5, 0, 0, "a"),
				bonEligible(3, 0.9, 0, 0, "b"),
			},
			want: 1,
		},
		{
			name: "equal groups and totals broken by lower index",
			cs: []Candidate{
				bonEligible(0, 0.5, 0, 0, "b"),
				bonEligible(1, 0.5, 0, 0, "a"),
				bonEligible(2, 0.5, 0, 0, "a"),
				bonEligible(3, 0.5, 0, 0, "b"),
			},
			want: 0,
		},
		{
			name: "representative is the best member of the winning group",
			cs: []Candidate{
				bonEligible(0, 0.4, 0, 0, "x"),
				bonEligible(1, 0.8, 0, 0, "x"),
				bonEligible(2, 0.9, 0, 0, "y"),
			},
			want: 1,
		},
		{
			name: "rejected candidates do not vote",
			cs: []Candidate{
				{Index: 0, Status: StatusRejected, Key: "x", Score: 0.1, Scored: true},
				{Index: 1, Status: StatusRejected, Key: "x", Score: 0.1, Scored: true},
				bonEligible(2, 0.9, 0, 0, "y"),
			},
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := selectCandidate("majority_vote", tt.cs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("selected %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBestOfNSelectNoEligible(t *testing.T) {
	cs := []Candidate{{Index: 0, Status: StatusRejected}, {Index: 1, Status: StatusSkipped}}
	for _, kind := range []string{"highest_score", "majority_vote"} {
		if _, err := selectCandidate(kind, cs, 0); !errors.Is(err, ErrNoEligibleCandidate) {
			t.Errorf("%s: err = %v, want ErrNoEligibleCandidate", kind, err)
		}
	}
}

func TestBestOfNAccountingSaturates(t *testing.T) {
	u := bonAddUsage(budget.Amount{TotalTokens: 1 << 62}, budget.Amount{TotalTokens: 1 << 62})
	if u.TotalTokens <= 0 {
		t.Fatalf("total tokens wrapped to %d", u.TotalTokens)
	}
}
