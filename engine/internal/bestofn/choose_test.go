package bestofn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/plan"
)

func TestParseChoice(t *testing.T) {
	eligible := []int{0, 2, 5}
	for _, tc := range []struct {
		out    string
		want   Choice
		errHas string
	}{
		{out: "2", want: Choice{Index: 2}},
		{out: "  5\n", want: Choice{Index: 5}},
		{out: `{"index": 0, "reason": "shortest"}`, want: Choice{Index: 0, Reason: "shortest"}},
		{out: `{"index":2}`, want: Choice{Index: 2}},
		{out: "", errHas: "printed nothing"},
		{out: "1", errHas: "not the index of an eligible candidate"},
		{out: "-0", errHas: "not a whole number"},
		{out: "2.0", errHas: "not a whole number"},
		{out: "2e0", errHas: "not a whole number"},
		{out: "02", errHas: "not a whole number"},
		{out: "+2", errHas: "not a whole number"},
		{out: "2 3", errHas: "not a whole number"},
		{out: "two", errHas: "not a whole number"},
		{out: `{"index": "2"}`, errHas: "not a whole number"},
		{out: `{"index": null}`, errHas: "not a whole number"},
		{out: `{"reason": "x"}`, errHas: "no index"},
		{out: `{"index": 2, "score": 1}`, errHas: "unknown field"},
		{out: `{"index": 2} {"index": 0}`, errHas: "follows"},
		{out: `{"index": 2}x`, errHas: "follows"},
		{out: "99999999999999999999999", errHas: "not the index"},
		{out: "\xff", errHas: "not UTF-8"},
		{out: strings.Repeat(" ", MaxChoiceBytes) + "2", errHas: "more than 4096 bytes"},
	} {
		got, err := ParseChoice(tc.out, eligible)
		if tc.errHas != "" {
			if err == nil || !errors.Is(err, ErrBadChoice) || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("ParseChoice(%q) = %+v, %v; want an error saying %q", tc.out, got, err, tc.errHas)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseChoice(%q) = %+v, %v; want %+v", tc.out, got, err, tc.want)
		}
	}
	long := `{"index": 0, "reason": "` + strings.Repeat("é", 700) + `"}`
	got, err := ParseChoice(long, eligible)
	if err != nil || len(got.Reason) > maxReasonBytes || !utf8.ValidString(got.Reason) {
		t.Errorf("a long reason: %d bytes, %v", len(got.Reason), err)
	}
}

func TestSelectorInputHasTheEligibleCandidatesOnly(t *testing.T) {
	cs := []Candidate{
		{Index: 0, Status: Eligible, Content: "a", Score: 0.5, Usage: budget.Amount{TotalTokens: 7}, Elapsed: 1500 * time.Millisecond},
		{Index: 1, Status: Rejected, Content: "b"},
		{Index: 2, Status: Eligible, Content: "c", Key: "k", Rationale: "why"},
	}
	raw, eligible, err := SelectorInput("best_of_n.answer", "task", cs)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		BestOfN    string              `json:"best_of_n"`
		Task       string              `json:"task"`
		Candidates []SelectorCandidate `json:"candidates"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	if in.BestOfN != "best_of_n.answer" || in.Task != "task" || len(in.Candidates) != 2 || len(eligible) != 2 || eligible[1] != 2 {
		t.Fatalf("input %s, eligible %v", raw, eligible)
	}
	if c := in.Candidates[0]; c.Content != "a" || c.Usage.TotalTokens != 7 || c.Elapsed != 1.5 {
		t.Errorf("candidate 0: %+v", c)
	}
	if c := in.Candidates[1]; c.Index != 2 || c.Key != "k" || c.Rationale != "why" {
		t.Errorf("candidate 2: %+v", c)
	}
}

// FuzzParseChoice: the parser of a command selector's output (hostile
// input) never panics, and what it accepts is an eligible index with a
// bounded, valid reason, which reads back the same when written as the
// documented object.
func FuzzParseChoice(f *testing.F) {
	for _, s := range []string{"0", " 3\n", `{"index": 3, "reason": "best"}`, `{"index":"3"}`, "3.0", `{"index":3}{`, "\xff", "-1", ""} {
		f.Add(s)
	}
	eligible := []int{0, 3, 7}
	f.Fuzz(func(t *testing.T, out string) {
		ch, err := ParseChoice(out, eligible)
		if err != nil {
			if !errors.Is(err, ErrBadChoice) {
				t.Fatalf("error %v does not wrap ErrBadChoice", err)
			}
			return
		}
		if ch.Index != 0 && ch.Index != 3 && ch.Index != 7 {
			t.Fatalf("accepted index %d of %q", ch.Index, out)
		}
		if len(ch.Reason) > maxReasonBytes || !utf8.ValidString(ch.Reason) {
			t.Fatalf("reason of %d bytes, valid %v", len(ch.Reason), utf8.ValidString(ch.Reason))
		}
		b, _ := json.Marshal(map[string]any{"index": ch.Index, "reason": ch.Reason})
		again, err := ParseChoice(string(b), eligible)
		if err != nil || again != ch {
			t.Fatalf("%+v written as %s reads back as %+v, %v", ch, b, again, err)
		}
	})
}

// A command selector runs after every candidate's events are recorded,
// under the caller's context, and gets every candidate; its choice is the
// selection (with its reason), and a failure or a choice of a candidate
// that is not eligible selects none and is the Outcome's SelectErr.
func TestRunnerCommandSelector(t *testing.T) {
	cfg := plan.BestOfN{Candidates: 3, MaxConcurrency: 3, MinimumScore: 0.5, Selector: plan.Selector{Kind: "command"}}
	score := func(c *Candidate) Score {
		if c.Content == "weak" {
			return Score{Score: 0.1, Accepted: true}
		}
		return Score{Score: 0.9, Accepted: true}
	}
	for _, tc := range []struct {
		name   string
		choose func(ctx context.Context, cs []Candidate) (Choice, error)
		want   int
		err    string
	}{
		{name: "chosen", want: 2, choose: func(ctx context.Context, cs []Candidate) (Choice, error) {
			return Choice{Index: 2, Reason: "the last"}, nil
		}},
		{name: "refused", want: -1, err: "denied", choose: func(ctx context.Context, cs []Candidate) (Choice, error) {
			return Choice{}, errors.New("denied")
		}},
		{name: "not eligible", want: -1, err: "candidate 1 is not eligible", choose: func(ctx context.Context, cs []Candidate) (Choice, error) {
			return Choice{Index: 1}, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeBon{}
			r := f.runner(cfg, answers("good", "weak", "fine"), score)
			var seen []string
			r.Choose = func(ctx context.Context, cs []Candidate) (Choice, error) {
				f.mu.Lock()
				seen = append([]string(nil), f.events...)
				f.mu.Unlock()
				if len(cs) != 3 {
					t.Errorf("the selector got %d candidates", len(cs))
				}
				return tc.choose(ctx, cs)
			}
			out := r.Run(context.Background())
			if len(seen) != 3 {
				t.Errorf("when the selector ran, the journal had %v; want every candidate_finished", seen)
			}
			if out.Selected != tc.want || (tc.err == "") != (out.SelectErr == nil) || (tc.err != "" && !strings.Contains(out.SelectErr.Error(), tc.err)) {
				t.Errorf("selected %d, SelectErr %v; want %d, %q", out.Selected, out.SelectErr, tc.want, tc.err)
			}
			if last := f.events[len(f.events)-1]; last != fmt.Sprintf("candidate_selected %d", tc.want) {
				t.Errorf("last event %q", last)
			}
		})
	}
}
