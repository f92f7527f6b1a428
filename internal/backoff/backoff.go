package backoff

import (
	"math"
	"time"
)

// Policy is one retry schedule.
type Policy struct {
	Initial    time.Duration // the wait before the first retry, before jitter
	Max        time.Duration // the longest wait; 0: no cap
	Multiplier float64       // the growth per retry; 2 when not positive
	Jitter     float64       // the spread, a fraction of the wait: 0.2 is ±20%
}

// Wait is the wait before retry n (1 is the first retry): Initial ×
// Multiplier^(n-1), times a factor in [1-Jitter, 1+Jitter) drawn from rand
// (which returns a number in [0, 1); unused without jitter), capped at Max.
// It is never negative, and a schedule that grows past what a Duration
// holds waits Max (or the longest Duration when there is no cap).
func (p Policy) Wait(n int, rand func() float64) time.Duration {
	mult := p.Multiplier
	if mult <= 0 {
		mult = 2
	}
	d := float64(p.Initial) * math.Pow(mult, float64(max(n, 1)-1))
	if p.Jitter > 0 {
		d *= 1 + p.Jitter*(2*rand()-1)
	}
	limit := float64(math.MaxInt64)
	if p.Max > 0 {
		limit = float64(p.Max)
	}
	switch {
	case math.IsNaN(d) || d <= 0:
		return 0
	case d >= limit:
		if p.Max > 0 {
			return p.Max
		}
		return math.MaxInt64
	}
	return time.Duration(d)
}
