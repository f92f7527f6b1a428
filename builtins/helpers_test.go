package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// testdataDir is the repository's testdata directory.
func testdataDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs("../testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// allowAll is a real policy chain whose built-in rules allow every tool:
// tests get Approved values the only way there is, through the gate.
func allowAll(t testing.TB, tb *Toolbox) *policy.Chain {
	t.Helper()
	rules, err := policy.NewRules(plan.RulesPolicy{Allow: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	var validate func(string, json.RawMessage) error
	if tb != nil {
		validate = tb.Validate
	}
	return policy.NewChain([]policy.Link{{Address: "policy.all", Gate: rules}}, "deny", validate)
}

func approve(t testing.TB, tb *Toolbox, tool, args string) policy.Approved {
	t.Helper()
	a := policy.Action{Type: policy.ToolCall, Tool: tool, Arguments: json.RawMessage(args)}
	if info, ok := tb.Info(tool); ok {
		a.Effect, a.Tags = info.Effect, info.Tags
	}
	v := allowAll(t, tb).Gate(context.Background(), policy.Input{Action: a})
	if !v.Approved.Valid() {
		t.Fatalf("gate did not approve %s: %+v", tool, v.Decision)
	}
	return v.Approved
}

// gateFunc is the Gate hook of RecoveryHooks, backed by a real chain.
func gateFunc(chain *policy.Chain) func(context.Context, policy.Action) (policy.Approved, error) {
	return func(ctx context.Context, a policy.Action) (policy.Approved, error) {
		v := chain.Gate(ctx, policy.Input{Action: a})
		if !v.Approved.Valid() {
			return policy.Approved{}, errors.New(v.Decision.Reason)
		}
		return v.Approved, nil
	}
}

func newToolbox(t testing.TB, tools []plan.Tool, servers []plan.MCPServer, opts Options) *Toolbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tb, err := NewToolbox(ctx, tools, servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return tb
}

func builtinTool(name string) plan.Tool {
	return plan.Tool{Address: "tool." + name, Executor: plan.Executor{Kind: "builtin", Builtin: name}}
}

func wantKind(t testing.TB, err error, kind FailureKind) *Failure {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not a *Failure", err, err)
	}
	if f.Kind != kind {
		t.Fatalf("kind = %s, want %s (error: %v)", f.Kind, kind, err)
	}
	return f
}

// fakeClock is the injected clock for breakers, caches and backoff.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleep records the wait and advances the clock instead of waiting.
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// processGone reports whether pid has exited: no such process, or a zombie
// waiting for a reaper (it runs no code).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// waitGone waits, bounded, for every pid in pidfile to be gone: the kill is
// asynchronous, so a bounded wait catches leaks without timing the kill.
func waitGone(t testing.TB, pidfile string, want int) {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, p)
	}
	if len(pids) < want {
		t.Fatalf("pidfile has %d pids, want at least %d", len(pids), want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for !processGone(p) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d leaked: still running", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
