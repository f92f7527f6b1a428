package builtins

import (
	"fmt"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// BreakerState is a circuit breaker's state.
type BreakerState string

const (
	Closed   BreakerState = "closed"    // calls run; consecutive failures are counted
	Open     BreakerState = "open"      // calls are refused at once with circuit_open
	HalfOpen BreakerState = "half_open" // a few probe calls run to test recovery
)

// breaker follows Symbiont's circuit breaker: failure_threshold consecutive
// failures open it; after recovery_timeout it lets half_open_max_calls probes
// through; a probe's success closes it, a probe's failure opens it again.
type breaker struct {
	cfg plan.CircuitBreaker
	now func() time.Time

	mu       sync.Mutex
	state    BreakerState
	failures int
	openedAt time.Time
	probes   int // probes in flight while half-open
}

func newBreaker(cfg plan.CircuitBreaker, now func() time.Time) *breaker {
	// A plan made without the compiler, which fills the defaults and
	// refuses values below 1.
	d := plan.DefaultCircuitBreaker()
	if cfg.FailureThreshold <= 0 {
		cfg.FailureThreshold = d.FailureThreshold
	}
	if cfg.HalfOpenMaxCalls <= 0 {
		cfg.HalfOpenMaxCalls = d.HalfOpenMaxCalls
	}
	return &breaker{cfg: cfg, now: now, state: Closed}
}

// newBreakerOf is the breaker of a tool (or of each tool of an MCP server)
// with the plan's settings: none when they turn it off, the default one
// when the plan has none (a plan made without the compiler, which fills
// it for every tool).
func newBreakerOf(cfg *plan.CircuitBreaker, now func() time.Time) *breaker {
	if cfg == nil {
		d := plan.DefaultCircuitBreaker()
		cfg = &d
	}
	if cfg.Disabled {
		return nil
	}
	return newBreaker(*cfg, now)
}

// errCircuitOpen says why a call was refused and when to expect a probe.
type errCircuitOpen struct {
	state BreakerState
	wait  time.Duration
}

func (e errCircuitOpen) Error() string {
	if e.state == HalfOpen {
		return "circuit half-open: probe calls already in flight"
	}
	return fmt.Sprintf("circuit open after repeated failures; next probe in %s", e.wait.Round(time.Millisecond))
}

// allow decides whether a call may run. A nil error means it may; probe says
// whether it is a half-open probe, to be passed back to done.
func (b *breaker) allow() (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Open:
		elapsed := b.now().Sub(b.openedAt)
		if elapsed < b.cfg.RecoveryTimeout.Std() {
			return false, errCircuitOpen{state: Open, wait: b.cfg.RecoveryTimeout.Std() - elapsed}
		}
		b.state, b.probes = HalfOpen, 0
		fallthrough
	case HalfOpen:
		if b.probes >= b.cfg.HalfOpenMaxCalls {
			return false, errCircuitOpen{state: HalfOpen}
		}
		b.probes++
		return true, nil
	}
	return false, nil
}

// outcome of a call, as the breaker counts it.
type outcome int

const (
	succeeded outcome = iota
	failed
	notCounted // invalid arguments or the caller's own cancellation say nothing about the tool's health
)

func (b *breaker) done(probe bool, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		if b.state != HalfOpen {
			return // another probe already decided
		}
		b.probes--
		switch o {
		case succeeded:
			b.state, b.failures = Closed, 0
		case failed:
			b.state, b.openedAt = Open, b.now()
		}
		return
	}
	if b.state != Closed {
		return // a call admitted before the circuit opened: its result is stale news
	}
	switch o {
	case succeeded:
		b.failures = 0
	case failed:
		b.failures++
		if b.failures >= b.cfg.FailureThreshold {
			b.state, b.openedAt = Open, b.now()
		}
	}
}

// State is the breaker's current state; an open breaker whose
// recovery_timeout has passed reports half_open.
func (b *breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && b.now().Sub(b.openedAt) >= b.cfg.RecoveryTimeout.Std() {
		return HalfOpen
	}
	return b.state
}
