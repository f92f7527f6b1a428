package builtins

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/plan"
)

// TestResilienceExampleTools runs the tools of examples/tools-resilience.hcl
// (the same scripts and settings, built by hand because the compiler sits
// above this package) through the sequence the example's script drives: two
// searches against a primary that is down.
func TestResilienceExampleTools(t *testing.T) {
	base, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	schema := []byte(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	search := plan.Tool{
		Address: "tool.search", Parameters: schema, Effect: "read", Timeout: plan.Duration(5 * time.Second), MaxOutputBytes: 16384,
		Executor:       plan.Executor{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{plan.Lit("./tools/search_primary.sh")}, Dir: "."}},
		CircuitBreaker: &plan.CircuitBreaker{FailureThreshold: 2, RecoveryTimeout: plan.Duration(time.Minute), HalfOpenMaxCalls: 1},
		Recovery:       "recovery.search",
	}
	backup := plan.Tool{
		Address: "tool.backup_search", Parameters: schema, Effect: "read", Timeout: plan.Duration(5 * time.Second),
		Executor: plan.Executor{Kind: "command", Command: &plan.CommandExec{Argv: []plan.String{plan.Lit("./tools/search_backup.sh")}, Dir: "."}},
	}
	recovery := chain(
		plan.RecoveryStrategy{Kind: "retry", Retry: &plan.RetryStrategy{MaxAttempts: 2, InitialBackoff: plan.Duration(50 * time.Millisecond), MaxBackoff: plan.Duration(200 * time.Millisecond), Multiplier: 2, Jitter: 0.2, On: []string{"timeout", "transport", "error"}}},
		fallbackStep("tool.backup_search"),
		deadLetterStep(),
	)
	clock := newFakeClock()
	state := t.TempDir()
	tb := newToolbox(t, []plan.Tool{search, backup}, nil, Options{BaseDir: base, StateDir: state, Now: clock.Now, Sleep: clock.Sleep})
	ev := &events{}
	hooks := RecoveryHooks{Gate: gateFunc(allowAll(t, tb)), Event: ev.add}
	ctx := context.Background()

	for i, q := range []string{"sea otter diet", "sea otter habitat"} {
		call := approve(t, tb, "search", `{"query":"`+q+`"}`)
		_, err := tb.Call(ctx, call)
		if err == nil {
			t.Fatal("the primary is down on purpose")
		}
		if i == 1 {
			wantKind(t, err, CircuitOpen)
		}
		r, err := tb.Recover(ctx, call, err, recovery, hooks)
		if err != nil {
			t.Fatalf("search %d: %v", i+1, err)
		}
		if r.Tool != "backup_search" || !strings.Contains(r.Content, `backup index: results for "`+q+`"`) {
			t.Errorf("search %d: %+v", i+1, r)
		}
		if i == 0 {
			if s, _ := tb.BreakerState("search"); s != Open {
				t.Errorf("after the first search the circuit is %s, want open", s)
			}
		}
	}
	want := []string{"retry#1 error", "fallback#1 error", "retry#1 circuit_open", "fallback#1 circuit_open"}
	if diff := cmp.Diff(want, ev.list()); diff != "" {
		t.Errorf("recovery events (-want +got):\n%s", diff)
	}
}
