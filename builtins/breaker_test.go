package builtins

import (
	"context"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

func breakerTool(url string) plan.Tool {
	t := httpTool("api", url, "POST")
	t.CircuitBreaker = &plan.CircuitBreaker{FailureThreshold: 3, RecoveryTimeout: plan.Duration(time.Minute), HalfOpenMaxCalls: 1}
	return t
}

func TestBreakerTransitionsThroughTheToolbox(t *testing.T) {
	clock := newFakeClock()
	srv := newFlakyServer(t, 500, 500, 500)
	tb := newToolbox(t, []plan.Tool{breakerTool(srv.URL)}, nil, Options{Now: clock.Now})
	call := approve(t, tb, "api", `{}`)
	ctx := context.Background()
	state := func() BreakerState {
		s, ok := tb.BreakerState("api")
		if !ok {
			t.Fatal("no breaker")
		}
		return s
	}

	// closed -> open after failure_threshold consecutive failures
	for i := 0; i < 3; i++ {
		if s := state(); s != Closed {
			t.Fatalf("before failure %d: %s", i+1, s)
		}
		_, err := tb.Call(ctx, call)
		wantKind(t, err, Transport)
	}
	if s := state(); s != Open {
		t.Fatalf("after 3 failures: %s", s)
	}

	// open: refused at once, the tool is not called
	_, err := tb.Call(ctx, call)
	f := wantKind(t, err, CircuitOpen)
	if srv.Calls() != 3 {
		t.Errorf("an open circuit reached the tool: %d calls", srv.Calls())
	}
	if f.Tool != "api" {
		t.Errorf("Tool %q", f.Tool)
	}

	// open -> half-open after recovery_timeout; a failed probe opens it again
	clock.Advance(time.Minute)
	if s := state(); s != HalfOpen {
		t.Fatalf("after recovery_timeout: %s", s)
	}
	srv.set(503)
	_, err = tb.Call(ctx, call)
	wantKind(t, err, Transport)
	if s := state(); s != Open {
		t.Fatalf("after a failed probe: %s", s)
	}
	_, err = tb.Call(ctx, call)
	wantKind(t, err, CircuitOpen)

	// half-open -> closed after a successful probe
	clock.Advance(time.Minute)
	if _, err := tb.Call(ctx, call); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if s := state(); s != Closed {
		t.Fatalf("after a good probe: %s", s)
	}
	if srv.Calls() != 5 {
		t.Errorf("calls %d, want 5", srv.Calls())
	}
}

func TestBreakerCountsConsecutiveFailuresOnly(t *testing.T) {
	clock := newFakeClock()
	srv := newFlakyServer(t, 500, 500, 200, 500, 500)
	tb := newToolbox(t, []plan.Tool{breakerTool(srv.URL)}, nil, Options{Now: clock.Now})
	call := approve(t, tb, "api", `{}`)
	for i := 0; i < 5; i++ {
		tb.Call(context.Background(), call)
	}
	if s, _ := tb.BreakerState("api"); s != Closed {
		t.Errorf("a success between failures resets the count; state %s", s)
	}
}

func TestBreakerIgnoresInvalidArgumentsAndCancellation(t *testing.T) {
	clock := newFakeClock()
	b := newBreaker(plan.CircuitBreaker{FailureThreshold: 1, RecoveryTimeout: plan.Duration(time.Second)}, clock.Now)
	for i := 0; i < 5; i++ {
		p, err := b.allow()
		if err != nil {
			t.Fatal(err)
		}
		b.done(p, notCounted)
	}
	if b.State() != Closed {
		t.Errorf("state %s", b.State())
	}
	// And through the toolbox: the model's bad arguments do not open the circuit.
	srv := newFlakyServer(t)
	tool := breakerTool(srv.URL)
	tool.Parameters = []byte(`{"type":"object","required":["q"]}`)
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{Now: clock.Now})
	for i := 0; i < 5; i++ {
		_, err := tb.Call(context.Background(), approve(t, tb, "api", `{"q":1}`))
		if err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := tb.BreakerState("api"); s != Closed {
		t.Errorf("state %s", s)
	}
}

func TestBreakerHalfOpenAdmitsOnlyMaxProbes(t *testing.T) {
	clock := newFakeClock()
	b := newBreaker(plan.CircuitBreaker{FailureThreshold: 1, RecoveryTimeout: plan.Duration(10 * time.Second), HalfOpenMaxCalls: 2}, clock.Now)
	p, _ := b.allow()
	b.done(p, failed)
	if _, err := b.allow(); err == nil {
		t.Fatal("open breaker admitted a call")
	}
	clock.Advance(10 * time.Second)
	p1, err1 := b.allow()
	p2, err2 := b.allow()
	_, err3 := b.allow()
	if err1 != nil || err2 != nil || !p1 || !p2 {
		t.Fatalf("probes refused: %v %v", err1, err2)
	}
	if err3 == nil {
		t.Fatal("a third probe was admitted with half_open_max_calls = 2")
	}
	b.done(p1, succeeded)
	if b.State() != Closed {
		t.Errorf("state after a good probe: %s", b.State())
	}
	// The other probe's late failure does not reopen a closed breaker.
	b.done(p2, failed)
	if b.State() != Closed {
		t.Errorf("state after a stale probe result: %s", b.State())
	}
}

// Every tool has a breaker with the design's defaults unless its plan
// turns it off: a tool whose plan says nothing (a plan made without the
// compiler, which writes the default into every tool) stops being called
// after three failures in a row, and one whose breaker is disabled is
// called every time.
func TestEveryToolHasABreakerUnlessDisabled(t *testing.T) {
	ctx := context.Background()
	srv := newFlakyServer(t, 500, 500, 500, 500, 500)
	plain := httpTool("plain", srv.URL, "POST") // CircuitBreaker nil
	tb := newToolbox(t, []plan.Tool{plain}, nil, Options{Now: newFakeClock().Now})
	call := approve(t, tb, "plain", `{}`)
	for i := 0; i < 5; i++ {
		tb.Call(ctx, call)
	}
	if s, ok := tb.BreakerState("plain"); !ok || s != Open {
		t.Errorf("breaker of a tool without settings: %q, %v; want open", s, ok)
	}
	if srv.Calls() != plan.DefaultCircuitBreaker().FailureThreshold {
		t.Errorf("the tool was called %d times; want %d, then refused", srv.Calls(), plan.DefaultCircuitBreaker().FailureThreshold)
	}

	off := newFlakyServer(t, 500, 500, 500, 500, 500)
	disabled := httpTool("unguarded", off.URL, "POST")
	disabled.CircuitBreaker = &plan.CircuitBreaker{Disabled: true}
	tb = newToolbox(t, []plan.Tool{disabled}, nil, Options{Now: newFakeClock().Now})
	call = approve(t, tb, "unguarded", `{}`)
	for i := 0; i < 5; i++ {
		_, err := tb.Call(ctx, call)
		wantKind(t, err, Transport)
	}
	if _, ok := tb.BreakerState("unguarded"); ok {
		t.Error("a disabled breaker exists")
	}
	if off.Calls() != 5 {
		t.Errorf("a tool without a breaker was called %d times of 5", off.Calls())
	}
}

// Each tool of an MCP server has a breaker of its own, with the server
// block's settings: one failing tool does not stop its siblings.
func TestMCPServerToolsHaveBreakers(t *testing.T) {
	ctx := context.Background()
	srv := stdioServer(t)
	srv.CircuitBreaker = &plan.CircuitBreaker{FailureThreshold: 2, RecoveryTimeout: plan.Duration(time.Minute), HalfOpenMaxCalls: 1}
	tb := newToolbox(t, nil, []plan.MCPServer{srv}, Options{Now: newFakeClock().Now})
	boom := approve(t, tb, "boom", `{}`)
	for i := 0; i < 2; i++ {
		_, err := tb.Call(ctx, boom)
		wantKind(t, err, Error)
	}
	_, err := tb.Call(ctx, boom)
	wantKind(t, err, CircuitOpen)
	if s, ok := tb.BreakerState("note"); !ok || s != Closed {
		t.Errorf("a sibling's breaker: %q, %v; want closed", s, ok)
	}
	if _, err := tb.Call(ctx, approve(t, tb, "note", `{}`)); err != nil {
		t.Errorf("a sibling of the failing tool: %v", err)
	}

	srv.CircuitBreaker = &plan.CircuitBreaker{Disabled: true}
	tb = newToolbox(t, nil, []plan.MCPServer{srv}, Options{Now: newFakeClock().Now})
	boom = approve(t, tb, "boom", `{}`)
	for i := 0; i < 4; i++ {
		_, err := tb.Call(ctx, boom)
		wantKind(t, err, Error)
	}
}
