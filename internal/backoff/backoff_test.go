package backoff

import (
	"math"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	const s = time.Second
	cases := []struct {
		name string
		p    Policy
		n    int
		rand float64
		want time.Duration
	}{
		{"first retry", Policy{Initial: s, Max: 30 * s}, 1, 0.5, s},
		{"doubles by default", Policy{Initial: s, Max: 30 * s}, 3, 0.5, 4 * s},
		{"multiplier", Policy{Initial: s, Max: 30 * s, Multiplier: 3}, 3, 0.5, 9 * s},
		{"capped", Policy{Initial: s, Max: 3 * s}, 5, 0.5, 3 * s},
		{"jitter up", Policy{Initial: s, Max: 30 * s, Jitter: 0.5}, 1, 1, 1500 * time.Millisecond},
		{"jitter down", Policy{Initial: s, Max: 30 * s, Jitter: 0.5}, 1, 0, 500 * time.Millisecond},
		// The cap comes after the jitter: a wait never exceeds Max.
		{"jitter does not pass the cap", Policy{Initial: s, Max: 3 * s, Jitter: 0.5}, 5, 1, 3 * s},
		{"jitter below the cap", Policy{Initial: s, Max: 3 * s, Jitter: 0.5}, 2, 0, s},
		{"no cap", Policy{Initial: s}, 4, 0.5, 8 * s},
		{"beyond a Duration, no cap", Policy{Initial: s}, 200, 0.5, math.MaxInt64},
		{"beyond a Duration, capped", Policy{Initial: s, Max: time.Hour}, 1 << 30, 0.5, time.Hour},
		{"zero initial", Policy{Max: s, Jitter: 0.2}, 3, 1, 0},
		{"jitter over 1 is never negative", Policy{Initial: s, Jitter: 2}, 1, 0, 0},
		{"n below 1 is the first retry", Policy{Initial: s}, 0, 0.5, s},
	}
	for _, c := range cases {
		if got := c.p.Wait(c.n, func() float64 { return c.rand }); got != c.want {
			t.Errorf("%s: Wait(%d) = %v, want %v", c.name, c.n, got, c.want)
		}
	}
}

// TestWaitBounds: for any schedule and draw, the wait lies in the jittered
// band around the uncapped wait, and never above Max.
func TestWaitBounds(t *testing.T) {
	for _, jitter := range []float64{0, 0.2, 0.5, 1} {
		for n := 1; n <= 12; n++ {
			for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
				p := Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: jitter}
				got := p.Wait(n, func() float64 { return r })
				base := float64(p.Initial) * math.Pow(2, float64(n-1))
				lo, hi := base*(1-jitter), base*(1+jitter)
				if got > p.Max || got < 0 {
					t.Fatalf("jitter %v, n %d, rand %v: %v outside [0, %v]", jitter, n, r, got, p.Max)
				}
				if float64(got) < math.Min(lo, float64(p.Max))-1 || float64(got) > hi+1 {
					t.Fatalf("jitter %v, n %d, rand %v: %v outside the band [%v, %v]", jitter, n, r, got, time.Duration(lo), time.Duration(hi))
				}
			}
		}
	}
}

func TestWaitUsesNoRandWithoutJitter(t *testing.T) {
	p := Policy{Initial: time.Second, Max: time.Minute}
	if got := p.Wait(2, nil); got != 2*time.Second {
		t.Errorf("Wait = %v, want 2s", got)
	}
}
