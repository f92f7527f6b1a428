package progress

import (
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestProgressErrorSimilarity(t *testing.T) {
	tests := []struct {
		a, b     string
		min, max float64
	}{
		{"timeout after 1503ms", "Timeout after 2011ms", 1, 1},
		{"request 8812 failed: connection reset", "request 9 failed: connection reset", 1, 1},
		{"file not found: a.txt", "not found: file a.txt", 1, 1},
		{"", "", 1, 1},
		{"permission denied", "", 0, 0},
		{"invalid argument: query", "rate limited, retry later", 0, 0},
		{"invalid argument: query missing", "invalid argument: path missing", 0.5, 0.7},
	}
	for _, tt := range tests {
		got := Similarity(tt.a, tt.b)
		if got < tt.min || got > tt.max {
			t.Errorf("Similarity(%q, %q) = %v, want in [%v, %v]", tt.a, tt.b, got, tt.min, tt.max)
		}
		if back := Similarity(tt.b, tt.a); back != got {
			t.Errorf("not symmetric: %v vs %v", got, back)
		}
	}
}

func TestProgressTrackerOnLimit(t *testing.T) {
	for _, onLimit := range []string{"skip", "abort", "escalate"} {
		t.Run(onLimit, func(t *testing.T) {
			tr := New(plan.Progress{MaxReattemptsPerStep: 2, SimilarityThreshold: 0.85, OnLimit: onLimit})
			// First failure and two similar reattempts are allowed.
			for i, msg := range []string{"timeout after 10ms", "timeout after 12ms", "timeout after 31ms"} {
				if v := tr.Observe("search", msg); v != Continue {
					t.Fatalf("failure %d: verdict %s, want continue", i, v)
				}
			}
			if v := tr.Observe("search", "timeout after 99ms"); v != Verdict(onLimit) {
				t.Fatalf("third reattempt: verdict %s, want %s", v, onLimit)
			}
			stuck := tr.Stuck("search")
			if stuck.Step != "search" || stuck.Reattempts != 3 || stuck.LastError != "timeout after 99ms" {
				t.Errorf("Stuck = %+v", stuck)
			}
		})
	}
}

func TestProgressTrackerDissimilarErrorResets(t *testing.T) {
	tr := New(plan.Progress{MaxReattemptsPerStep: 1, SimilarityThreshold: 0.85, OnLimit: "abort"})
	steps := []struct {
		key, msg string
		want     Verdict
	}{
		{"s", "invalid argument: query", Continue},
		{"s", "invalid argument: query", Continue},      // reattempt 1
		{"s", "connection reset by peer", Continue},     // changed approach: reset
		{"s", "connection reset by peer", Continue},     // reattempt 1
		{"other", "connection reset by peer", Continue}, // steps are independent
		{"s", "connection reset by peer", Abort},        // reattempt 2 > 1
	}
	for i, st := range steps {
		if v := tr.Observe(st.key, st.msg); v != st.want {
			t.Fatalf("observation %d: %s, want %s", i, v, st.want)
		}
	}
	tr.Succeeded("s")
	if v := tr.Observe("s", "connection reset by peer"); v != Continue {
		t.Fatalf("after success: %s, want continue", v)
	}
}

func TestProgressTrackerDisabled(t *testing.T) {
	tr := New(plan.Progress{MaxReattemptsPerStep: 0, SimilarityThreshold: 0.5, OnLimit: "abort"})
	for range 10 {
		if v := tr.Observe("s", "same"); v != Continue {
			t.Fatalf("disabled tracker said %s", v)
		}
	}
	var nilTracker *Tracker
	if v := nilTracker.Observe("s", "x"); v != Continue {
		t.Fatalf("nil tracker said %s", v)
	}
}

func TestProgressTrackerConcurrent(t *testing.T) {
	tr := New(plan.Progress{MaxReattemptsPerStep: 1000, SimilarityThreshold: 0.85, OnLimit: "abort"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				tr.Observe("s", "boom 1")
			}
		}()
	}
	wg.Wait()
	if got := tr.Stuck("s").Reattempts; got != 399 {
		t.Fatalf("reattempts = %d, want 399", got)
	}
}

// A call refused by an open circuit breaker repeats the step's last
// failure, whatever its text: the breaker opening does not restart the
// count, and the stuck error names the failure behind it.
func TestProgressTrackerRepeat(t *testing.T) {
	tr := New(plan.Progress{MaxReattemptsPerStep: 2, SimilarityThreshold: 0.85, OnLimit: "abort"})
	if v := tr.Observe("broken", "disk quota exceeded"); v != Continue {
		t.Fatalf("first failure: %s", v)
	}
	if v := tr.Observe("broken", "disk quota exceeded"); v != Continue {
		t.Fatalf("second failure: %s", v)
	}
	if v := tr.Repeat("broken", "circuit open after repeated failures; next probe in 1m0s"); v != Continue {
		t.Fatalf("a refused call as the third failure: %s", v)
	}
	if v := tr.Repeat("broken", "circuit open after repeated failures; next probe in 59.9s"); v != Abort {
		t.Fatalf("a refused call over the limit: %s, want abort", v)
	}
	if st := tr.Stuck("broken"); st.LastError != "disk quota exceeded" || st.Reattempts != 3 {
		t.Errorf("stuck %+v, want the failure behind the breaker and 3 reattempts", st)
	}
	// With nothing before it, a refusal is a first failure.
	if v := tr.Repeat("other", "circuit open"); v != Continue {
		t.Errorf("a first refusal: %s", v)
	}
}
