package bestofn

import (
	"errors"
	"testing"

	"github.com/symbi-dev/symbi/budget"
)

func eligible(index int, score float64, cost float64, tokens int64, key string) Candidate {
	return Candidate{
		Index: index, Status: Eligible, Score: score, Scored: true, Key: key,
		Usage: budget.Amount{CostUSD: cost, TotalTokens: tokens},
	}
}

func TestSelectHighestScore(t *testing.T) {
	tests := []struct {
		name string
		tol  float64
		cs   []Candidate
		want int
	}{
		{
			name: "clear winner",
			cs:   []Candidate{eligible(0, 0.5, 0, 10, ""), eligible(1, 0.9, 0, 10, ""), eligible(2, 0.7, 0, 10, "")},
			want: 1,
		},
		{
			name: "tie broken by lower cost",
			tol:  0.01,
			cs:   []Candidate{eligible(0, 0.9, 0.02, 10, ""), eligible(1, 0.895, 0.01, 50, ""), eligible(2, 0.5, 0, 1, "")},
			want: 1,
		},
		{
			name: "equal cost broken by fewer tokens",
			tol:  0.01,
			cs:   []Candidate{eligible(0, 0.9, 0.01, 30, ""), eligible(1, 0.9, 0.01, 20, "")},
			want: 1,
		},
		{
			name: "all equal broken by lower index",
			cs:   []Candidate{eligible(0, 0.9, 0.01, 30, ""), eligible(1, 0.9, 0.01, 30, "")},
			want: 0,
		},
		{
			name: "outside tolerance the cheaper one loses",
			tol:  1e-9,
			cs:   []Candidate{eligible(0, 0.9, 0.05, 30, ""), eligible(1, 0.89, 0.0, 1, "")},
			want: 0,
		},
		{
			name: "scorer usage counts toward cost",
			tol:  0.1,
			cs: []Candidate{
				func() Candidate { c := eligible(0, 0.9, 0.01, 10, ""); c.ScorerUsage.CostUSD = 0.05; return c }(),
				eligible(1, 0.9, 0.02, 10, ""),
			},
			want: 1,
		},
		{
			name: "ineligible candidates never win",
			cs: []Candidate{
				{Index: 0, Status: Rejected, Score: 1, Scored: true},
				{Index: 1, Status: ScoringFailed},
				eligible(2, 0.2, 0, 0, ""),
			},
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select("highest_score", tt.cs, tt.tol)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("selected %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSelectMajorityVote(t *testing.T) {
	tests := []struct {
		name string
		cs   []Candidate
		want int
	}{
		{
			name: "largest group wins over a higher single score",
			cs: []Candidate{
				eligible(0, 1.0, 0, 0, "43"),
				eligible(1, 0.6, 0, 0, "42"),
				eligible(2, 0.5, 0, 0, "42"),
			},
			want: 1,
		},
		{
			name: "equal groups broken by total score",
			cs: []Candidate{
				eligible(0, 0.5, 0, 0, "a"),
				eligible(1, 0.9, 0, 0, "b"),
				eligible(2, 0.5, 0, 0, "a"),
				eligible(3, 0.9, 0, 0, "b"),
			},
			want: 1,
		},
		{
			name: "equal groups and totals broken by lower index",
			cs: []Candidate{
				eligible(0, 0.5, 0, 0, "b"),
				eligible(1, 0.5, 0, 0, "a"),
				eligible(2, 0.5, 0, 0, "a"),
				eligible(3, 0.5, 0, 0, "b"),
			},
			want: 0,
		},
		{
			name: "representative is the best member of the winning group",
			cs: []Candidate{
				eligible(0, 0.4, 0, 0, "x"),
				eligible(1, 0.8, 0, 0, "x"),
				eligible(2, 0.9, 0, 0, "y"),
			},
			want: 1,
		},
		{
			name: "rejected candidates do not vote",
			cs: []Candidate{
				{Index: 0, Status: Rejected, Key: "x", Score: 0.1, Scored: true},
				{Index: 1, Status: Rejected, Key: "x", Score: 0.1, Scored: true},
				eligible(2, 0.9, 0, 0, "y"),
			},
			want: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select("majority_vote", tt.cs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("selected %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSelectNoEligible(t *testing.T) {
	cs := []Candidate{{Index: 0, Status: Rejected}, {Index: 1, Status: Skipped}}
	for _, kind := range []string{"highest_score", "majority_vote"} {
		if _, err := Select(kind, cs, 0); !errors.Is(err, ErrNoEligibleCandidate) {
			t.Errorf("%s: err = %v, want ErrNoEligibleCandidate", kind, err)
		}
	}
}

func TestAccountingSaturates(t *testing.T) {
	u := addUsage(budget.Amount{TotalTokens: 1 << 62}, budget.Amount{TotalTokens: 1 << 62})
	if u.TotalTokens <= 0 {
		t.Fatalf("total tokens wrapped to %d", u.TotalTokens)
	}
}
