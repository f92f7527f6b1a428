package opaproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/policy/opa"
)

// helperEnv makes this test binary the helper: TestMain serves instead of
// testing when it is set, as symbi-opa's main does.
const helperEnv = "SYMBI_OPAPROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := Serve(context.Background(), os.Stdin, os.Stdout, opa.Engine{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newClient is a client whose helper is this test binary, closed with t.
func newClient(t testing.TB) *Client {
	t.Helper()
	t.Setenv(helperEnv, "1") // the helper inherits it
	c := NewClient(os.Executable)
	t.Cleanup(func() { c.Close() })
	return c
}

// echoRego decides with the whole input document as OPA serialises it, so a
// reason compares every member, every number's digits, of the input the
// helper built with the one built in-process.
const echoRego = `package echo

decision := {"decision": "deny", "reason": json.marshal(input)}

strict := {"decision": "allow", "reason": sprintf("%v %v", [input.context.big, input.run.budget.max_cost_usd])} if input.context.small < 0.001

test_echo if decision.decision == "deny"

test_fails if false

todo_test_later if true
`

func writePolicy(t testing.TB, dir, name, text string) plan.FileRef {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return plan.NewFileRef(name, []byte(text))
}

// inputs are hostile and awkward: numbers of every Go type the context and
// budget hold, in every form OPA writes them; arguments that are not JSON;
// strings with escapes.
func inputs() []policy.Input {
	base := func() policy.Input {
		return policy.Input{
			Action: policy.Action{Type: policy.ToolCall, Tool: "shell", CallID: "c1", Arguments: json.RawMessage(`{"cmd":"ls <a> & \u00e9","n":1.0e2,"big":123456789012345678901234567890}`), Effect: "destructive", Tags: []string{"exec", "x\"y"}},
			Agent:  policy.AgentInfo{Name: "researcher", Model: "fast", DelegationDepth: 2},
			Run: policy.RunInfo{ID: "run-1", Iteration: 3, Usage: policy.Usage{ModelCalls: 4, TotalTokens: 1 << 40, CostUSD: 0.1 + 0.2},
				Budget: map[string]any{"max_iterations": int64(9007199254740993), "max_cost_usd": 1e-7, "timeout": "30s"}},
			Context: map[string]any{"env": "test", "big": 123456789012.0, "small": 0.000001, "huge": 1e300, "int": 7, "neg": int64(-1),
				"u": uint64(math.MaxUint64), "num": json.Number("1.50"), "list": []any{1.5, "x", nil, true, map[string]any{"k": 2.0}}, "strs": []string{"a", "b"},
				"small32": float32(0.1), "m": map[string]string{"a": "b"}, "i32": int32(5)},
		}
	}
	var out []policy.Input
	out = append(out, base())
	in := base()
	in.Action.Arguments = json.RawMessage(`{not json`)
	out = append(out, in)
	in = base()
	in.Context = nil
	in.Run.Budget = nil
	in.Action.Arguments = nil
	out = append(out, in)
	in = base()
	in.Action = policy.Action{Type: policy.Respond, Content: "the answer\n\t\"quoted\" \u2028"}
	out = append(out, in)
	return out
}

// TestDecisionsSameAsInProcess: every input gives, through the helper, the
// decision and the explanation policy/opa gives in this process.
func TestDecisionsSameAsInProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := writePolicy(t, dir, "echo.rego", echoRego)
	c := newClient(t)
	for _, query := range []string{"data.echo.decision", "data.echo.strict"} {
		pol := plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: query}
		local, err := opa.NewOPA(ctx, "policy.echo", pol, dir)
		if err != nil {
			t.Fatal(err)
		}
		remote, err := c.PrepareOPA(ctx, "policy.echo", pol, dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, in := range inputs() {
			want, got := local.Decide(ctx, in), remote.Decide(ctx, in)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, input %d: through the helper\n%+v\nin-process\n%+v", query, i, got, want)
			}
			wd, wt := local.Explain(ctx, in)
			gd, gt := remote.Explain(ctx, in)
			if !reflect.DeepEqual(gd, wd) || gt != wt {
				t.Errorf("%s, input %d: explain through the helper differs:\n%s\nin-process:\n%s", query, i, gt, wt)
			}
		}
	}
	if want := `"big":123456789012`; !strings.Contains(mustDecide(t, c, dir, ref).Reason, want) {
		t.Errorf("the echoed input lost a number's digits: want %s in it", want)
	}
}

func mustDecide(t *testing.T, c *Client, dir string, ref plan.FileRef) policy.Decision {
	g, err := c.PrepareOPA(context.Background(), "policy.echo", plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.echo.decision"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return g.Decide(context.Background(), inputs()[0])
}

// TestNumbersThatJSONCannotCarryAreDenies: not finite or not UTF-8, the
// input does not cross the pipe, and the decision is a deny.
func TestNumbersThatJSONCannotCarryAreDenies(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := writePolicy(t, dir, "allow.rego", "package a\n\ndecision := true\n")
	g, err := newClient(t).PrepareOPA(ctx, "policy.a", plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.a.decision"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []policy.Input{
		{Action: policy.Action{Type: policy.ToolCall, Tool: "x"}, Context: map[string]any{"n": math.NaN()}},
		{Action: policy.Action{Type: policy.ToolCall, Tool: "x"}, Run: policy.RunInfo{Usage: policy.Usage{CostUSD: math.Inf(1)}}},
		{Action: policy.Action{Type: policy.ToolCall, Tool: "x\xff"}},
		{Action: policy.Action{Type: policy.ToolCall, Tool: "x"}, Context: map[string]any{"k": []any{"\xfe"}}},
	} {
		if d := g.Decide(ctx, in); d.Outcome != policy.Deny || !d.EngineError {
			t.Errorf("%+v: got %+v, want a deny marked as an engine error", in, d)
		}
	}
	if d := g.Decide(ctx, policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: "x"}}); d.Outcome != policy.Allow {
		t.Errorf("a plain input: %+v", d)
	}
}

// TestLoadErrorsKeepFileAndLine: what does not load says where, through
// the helper as in-process, and a changed file fails its digest there.
func TestLoadErrorsKeepFileAndLine(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newClient(t)
	broken := writePolicy(t, dir, "broken.rego", "package b\n\ndecision := \n")
	changed := writePolicy(t, dir, "changed.rego", "package c\n\ndecision := true\n")
	writePolicy(t, dir, "changed.rego", "package c\n\ndecision := false\n")
	changed.Text = "" // read from the disk, its digest checked
	ok := writePolicy(t, dir, "ok.rego", "package o\n\nx := 1\n")
	for i, pol := range []plan.OPAPolicy{
		{Modules: []plan.FileRef{broken}, Query: "data.b.decision"},
		{Modules: []plan.FileRef{changed}, Query: "data.c.decision"},
		{Modules: []plan.FileRef{ok}, Query: "data.o.decision"},
		{Modules: []plan.FileRef{ok}, Query: "input.x"},
		{Query: "data.o.decision"},
	} {
		_, lerr := opa.NewOPA(ctx, "policy.p", pol, dir)
		_, rerr := c.PrepareOPA(ctx, "policy.p", pol, dir)
		var le, re policy.LoadErrors
		if !errors.As(lerr, &le) || !errors.As(rerr, &re) {
			t.Fatalf("policy %d: %v / %v: want LoadErrors from both", i, lerr, rerr)
		}
		if rerr.Error() != lerr.Error() {
			t.Errorf("through the helper: %v\nin-process: %v", rerr, lerr)
		}
		for j := range le {
			if re[j].File != le[j].File || re[j].Line != le[j].Line || re[j].Policy != le[j].Policy {
				t.Errorf("policy %d, error %d: %+v, want %+v", i, j, re[j], le[j])
			}
		}
		if errors.Is(lerr, policy.ErrUndefinedQuery) != errors.Is(rerr, policy.ErrUndefinedQuery) {
			t.Errorf("%v: errors.Is(ErrUndefinedQuery) differs", rerr)
		}
	}
}

func TestRegoTestsAndImpure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pol := plan.OPAPolicy{Modules: []plan.FileRef{writePolicy(t, dir, "echo.rego", echoRego), writePolicy(t, dir, "t.rego", "package t\n\nnow := time.now_ns()\n")}, Query: "data.echo.decision"}
	local, err := opa.NewOPA(ctx, "policy.echo", pol, dir)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := newClient(t).PrepareOPA(ctx, "policy.echo", pol, dir)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(rs []policy.TestResult) []policy.TestResult {
		for i := range rs {
			rs[i].Elapsed = 0
		}
		return rs
	}
	want, got := strip(local.RegoTests(ctx)), strip(remote.RegoTests(ctx))
	if len(want) != 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("Rego tests through the helper:\n%+v\nin-process:\n%+v", got, want)
	}
	wi, _ := local.Impure(ctx)
	gi, err := remote.Impure(ctx)
	if err != nil || !reflect.DeepEqual(gi, wi) || len(gi) != 1 {
		t.Errorf("Impure through the helper: %v %v, in-process %v", gi, err, wi)
	}
}

// TestConcurrentDecisions: many goroutines decide at once over one helper,
// each getting its own answer.
func TestConcurrentDecisions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := writePolicy(t, dir, "tool.rego", "package t\n\ndecision := {\"decision\": \"deny\", \"reason\": input.action.tool}\n")
	g, err := newClient(t).PrepareOPA(ctx, "policy.t", plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.t.decision"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				tool := fmt.Sprintf("t%d_%d", w, i)
				if d := g.Decide(ctx, policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: tool}}); d.Reason != tool || d.EngineError {
					t.Errorf("decided %+v for %s", d, tool)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHelperDeathFailsClosed: once the helper is gone, every decision is a
// deny that says so, and no policy loads.
func TestHelperDeathFailsClosed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := writePolicy(t, dir, "allow.rego", "package a\n\ndecision := true\n")
	pol := plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.a.decision"}
	c := newClient(t)
	g, err := c.PrepareOPA(ctx, "policy.a", pol, dir)
	if err != nil {
		t.Fatal(err)
	}
	in := policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: "x"}}
	if d := g.Decide(ctx, in); d.Outcome != policy.Allow {
		t.Fatalf("before: %+v", d)
	}
	if err := syscall.Kill(c.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		d := g.Decide(ctx, in)
		if d.Outcome != policy.Deny || !d.EngineError || !strings.Contains(d.Reason, "exited") {
			t.Fatalf("after the helper died: %+v, want a deny saying it exited", d)
		}
	}
	if _, err := c.PrepareOPA(ctx, "policy.a", pol, dir); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("loading after the helper died: %v", err)
	}
}

// TestVersionMismatchIsRefused: a helper of another build does not decide.
func TestVersionMismatchIsRefused(t *testing.T) {
	c := newClient(t)
	c.version = "symbi-opa/0 another build"
	dir := t.TempDir()
	ref := writePolicy(t, dir, "allow.rego", "package a\n\ndecision := true\n")
	_, err := c.PrepareOPA(context.Background(), "policy.a", plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.a.decision"}, dir)
	if err == nil || !strings.Contains(err.Error(), "another build") || !strings.Contains(err.Error(), "go build -o bin/ ./cmd/...") {
		t.Fatalf("got %v, want the mismatch refused with how to build both", err)
	}
	if c.Pid() != 0 {
		t.Error("the refused helper is still the client's")
	}
}

// TestNoProcessLeft: Close stops the helper, and a helper whose stdin
// closes exits by itself.
func TestNoProcessLeft(t *testing.T) {
	dir := t.TempDir()
	ref := writePolicy(t, dir, "allow.rego", "package a\n\ndecision := true\n")
	c := newClient(t)
	if _, err := c.PrepareOPA(context.Background(), "policy.a", plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.a.decision"}, dir); err != nil {
		t.Fatal(err)
	}
	pid := c.Pid()
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	_ = p.stdin.Close() // what symbi's exit does
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the helper %d did not exit when its stdin closed", pid)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d is still there", pid)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func TestFindSaysHowToBuild(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Find()
	if err == nil || !strings.Contains(err.Error(), "go build -o bin/ ./cmd/...") {
		t.Fatalf("Find with no helper anywhere: %v", err)
	}
}

func TestMissingHelperFailsToLoad(t *testing.T) {
	c := NewClient(func() (string, error) { return "", errors.New("opa: symbi-opa is neither beside symbi nor on PATH") })
	_, err := c.PrepareOPA(context.Background(), "policy.a", plan.OPAPolicy{Query: "data.a.decision"}, t.TempDir())
	var le policy.LoadErrors
	if !errors.As(err, &le) || le[0].Policy != "policy.a" || !strings.Contains(err.Error(), "symbi-opa") {
		t.Fatalf("got %v", err)
	}
}

// FuzzWireValue: a context or budget value crosses the pipe and becomes, in
// the helper, the very OPA value (same text, digit for digit) that OPA
// builds from the Go value in-process.
func FuzzWireValue(f *testing.F) {
	f.Add(int64(9007199254740993), 123456789012.0, uint64(math.MaxUint64), "x\"y", 0.000001, int32(-5))
	f.Add(int64(-1), 1e300, uint64(0), "", 5.0, int32(0))
	f.Fuzz(func(t *testing.T, i int64, x float64, u uint64, s string, y float64, small int32) {
		in := map[string]any{"i": i, "x": x, "u": u, "s": s, "n": int(i),
			"list": []any{y, s, nil, true, []string{s}}, "nested": map[string]any{"y": y, "m": map[string]string{s: s}},
			"small": small, "f32": float32(y)}
		want, werr := ast.InterfaceToValue(in)
		w, err := opaMap(in)
		if err != nil {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) || !utf8.ValidString(s) {
				return // refused, as the client refuses it: a deny
			}
			t.Fatalf("opaMap refused %v: %v", in, err)
		}
		if werr != nil {
			t.Skipf("OPA itself refuses %v: %v", in, werr)
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := decodeLine(b, &back); err != nil {
			t.Fatal(err)
		}
		got, err := ast.InterfaceToValue(back)
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("through the wire\n%s\nin-process\n%s", got, want)
		}
	})
}

// TestDroppedGatesAreReleased: a policy nobody holds is forgotten by the
// helper, so a REPL that prepares one per :gate does not grow it forever.
func TestDroppedGatesAreReleased(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := writePolicy(t, dir, "allow.rego", "package a\n\ndecision := true\n")
	pol := plan.OPAPolicy{Modules: []plan.FileRef{ref}, Query: "data.a.decision"}
	c := newClient(t)
	kept, err := c.PrepareOPA(ctx, "policy.a", pol, dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := c.PrepareOPA(ctx, "policy.a", pol, dir); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	held := func() uint64 {
		resp, err := p.call(ctx, &request{Op: opCount})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Handle
	}
	deadline := time.Now().Add(30 * time.Second)
	for held() > 1 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if n := held(); n != 1 {
		t.Errorf("the helper holds %d policies, want the 1 still referenced", n)
	}
	if d := kept.Decide(ctx, policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: "x"}}); d.Outcome != policy.Allow {
		t.Errorf("the kept gate after the others were released: %+v", d)
	}
}
