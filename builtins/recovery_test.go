package builtins

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

func retryStep(max int, on ...string) plan.RecoveryStrategy {
	return plan.RecoveryStrategy{Kind: "retry", Retry: &plan.RetryStrategy{
		MaxAttempts: max, InitialBackoff: plan.Duration(100 * time.Millisecond), MaxBackoff: plan.Duration(time.Second), Multiplier: 2, On: on,
	}}
}

func fallbackStep(tools ...string) plan.RecoveryStrategy {
	return plan.RecoveryStrategy{Kind: "fallback", Fallback: &plan.FallbackStrategy{Tools: tools}}
}

func cachedStep(staleness time.Duration) plan.RecoveryStrategy {
	return plan.RecoveryStrategy{Kind: "cached_result", CachedResult: &plan.CachedResultStrategy{MaxStaleness: plan.Duration(staleness)}}
}

func llmStep(max int) plan.RecoveryStrategy {
	return plan.RecoveryStrategy{Kind: "llm_recovery", LLMRecovery: &plan.LLMRecoveryStrategy{MaxAttempts: max}}
}

func escalateStep() plan.RecoveryStrategy {
	return plan.RecoveryStrategy{Kind: "escalate", Escalate: &plan.EscalateStrategy{Queue: "ops", Timeout: plan.Duration(time.Minute)}}
}

func deadLetterStep() plan.RecoveryStrategy {
	return plan.RecoveryStrategy{Kind: "dead_letter", DeadLetter: &plan.DeadLetterStrategy{}}
}

func chain(steps ...plan.RecoveryStrategy) plan.Recovery {
	return plan.Recovery{Address: "recovery.test", Strategies: steps}
}

// events records RecoveryHooks.Event calls, for the journal's
// recovery_triggered events.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(strategy string, attempt int, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		e.log = append(e.log, fmt.Sprintf("%s#%d <nil>", strategy, attempt))
		return
	}
	e.log = append(e.log, fmt.Sprintf("%s#%d %s", strategy, attempt, KindOf(err)))
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

type recoveryFixture struct {
	tb      *Toolbox
	clock   *fakeClock
	primary *flakyServer
	backup  *flakyServer
	ev      *events
	hooks   RecoveryHooks
	state   string
}

// newRecoveryFixture has two http tools that fail on purpose: "primary" and
// "backup", each scripted with the statuses given.
func newRecoveryFixture(t *testing.T, primary, backup []int) *recoveryFixture {
	f := &recoveryFixture{clock: newFakeClock(), ev: &events{}, state: t.TempDir()}
	f.primary = newFlakyServer(t, primary...)
	f.backup = newFlakyServer(t, backup...)
	// Recovery alone is under test: the tools' breakers, which would open
	// after three failures, are off.
	primaryTool, backupTool := httpTool("primary", f.primary.URL, "POST"), httpTool("backup", f.backup.URL, "POST")
	primaryTool.CircuitBreaker = &plan.CircuitBreaker{Disabled: true}
	backupTool.CircuitBreaker = &plan.CircuitBreaker{Disabled: true}
	f.tb = newToolbox(t, []plan.Tool{primaryTool, backupTool}, nil,
		Options{StateDir: f.state, Now: f.clock.Now, Sleep: f.clock.Sleep})
	f.hooks = RecoveryHooks{Gate: gateFunc(allowAll(t, f.tb)), Event: f.ev.add}
	return f
}

// fail makes the primary's first call and returns its failure.
func (f *recoveryFixture) fail(t *testing.T, call policy.Approved) error {
	t.Helper()
	_, err := f.tb.Call(context.Background(), call)
	if err == nil {
		t.Fatal("the primary was scripted to fail")
	}
	return err
}

func TestRetrySucceedsWithExponentialBackoff(t *testing.T) {
	f := newRecoveryFixture(t, []int{503, 502, 500}, nil)
	call := approve(t, f.tb, "primary", `{"q":1}`)
	r, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(retryStep(4)), f.hooks)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Content, `"call":4`) || r.Tool != "primary" {
		t.Errorf("result %+v", r)
	}
	if diff := cmp.Diff([]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, f.clock.Sleeps()); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"retry#1 transport", "retry#2 transport", "retry#3 transport"}, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRetryHonoursRetryAfterAndJitter(t *testing.T) {
	f := newRecoveryFixture(t, []int{429}, nil)
	call := approve(t, f.tb, "primary", `{}`)
	if _, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(retryStep(2, "rate_limited")), f.hooks); err != nil {
		t.Fatal(err)
	}
	if s := f.clock.Sleeps(); len(s) != 1 || s[0] != 3*time.Second {
		t.Errorf("sleeps %v, want the server's Retry-After of 3s", s)
	}
	tb := &Toolbox{opts: Options{Jitter: func() float64 { return 1 }}}
	s := plan.RetryStrategy{InitialBackoff: plan.Duration(time.Second), MaxBackoff: plan.Duration(3 * time.Second), Multiplier: 2, Jitter: 0.5}
	if d := tb.backoff(s, 1); d != 1500*time.Millisecond {
		t.Errorf("jitter +50%%: %s", d)
	}
	if d := tb.backoff(s, 5); d != 3*time.Second {
		t.Errorf("jittered, then capped at max_backoff: %s (a wait never exceeds max_backoff)", d)
	}
	tb.opts.Jitter = func() float64 { return 0 }
	if d := tb.backoff(s, 2); d != time.Second {
		t.Errorf("jitter -50%%: %s", d)
	}
}

func TestRetryOnlyForListedKinds(t *testing.T) {
	f := newRecoveryFixture(t, []int{404}, nil)
	call := approve(t, f.tb, "primary", `{}`)
	failure := f.fail(t, call)
	_, err := f.tb.Recover(context.Background(), call, failure, chain(retryStep(3, "transport", "timeout")), f.hooks)
	wantKind(t, err, Error)
	if f.primary.Calls() != 1 || len(f.clock.Sleeps()) != 0 {
		t.Errorf("an error kind not in on was retried: %d calls", f.primary.Calls())
	}
	if diff := cmp.Diff([]string{"retry#1 error"}, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRetryExhausted(t *testing.T) {
	f := newRecoveryFixture(t, []int{500, 500, 500}, nil)
	call := approve(t, f.tb, "primary", `{}`)
	_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(retryStep(3)), f.hooks)
	wantKind(t, err, Transport)
	if f.primary.Calls() != 3 {
		t.Errorf("calls %d, want max_attempts = 3 in all", f.primary.Calls())
	}
}

func TestFallback(t *testing.T) {
	f := newRecoveryFixture(t, []int{500}, nil)
	call := approve(t, f.tb, "primary", `{"q":"otters"}`)
	r, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(fallbackStep("tool.nowhere", "tool.backup")), f.hooks)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tool != "backup" || f.backup.bodies[0] != `{"q":"otters"}` {
		t.Errorf("result %+v, backup got %v", r, f.backup.bodies)
	}
	if diff := cmp.Diff([]string{"fallback#1 transport", "fallback#2 error"}, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestFallbackIsGated(t *testing.T) {
	f := newRecoveryFixture(t, []int{500}, nil)
	call := approve(t, f.tb, "primary", `{}`)
	rules, _ := policy.NewRules(plan.RulesPolicy{Deny: []string{"backup"}, Allow: []string{"*"}})
	f.hooks.Gate = gateFunc(policy.NewChain([]policy.Link{{Address: "policy.nobackup", Gate: rules}}, "deny", f.tb.Validate))
	_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(fallbackStep("tool.backup")), f.hooks)
	if err == nil || !strings.Contains(err.Error(), "fallback denied") {
		t.Errorf("error %v", err)
	}
	if f.backup.Calls() != 0 {
		t.Error("a denied fallback ran")
	}
}

func TestCachedResult(t *testing.T) {
	f := newRecoveryFixture(t, []int{200, 500, 500}, nil)
	call := approve(t, f.tb, "primary", `{"b":2,"a":1}`)
	first, err := f.tb.Call(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Minute)
	// Same arguments, other key order: the same call signature.
	again := approve(t, f.tb, "primary", `{"a":1, "b":2}`)
	r, err := f.tb.Recover(context.Background(), again, f.fail(t, again), chain(cachedStep(10*time.Minute)), f.hooks)
	if err != nil || !r.Cached || r.Content != first.Content {
		t.Fatalf("cached: %+v %v", r, err)
	}
	f.clock.Advance(6 * time.Minute)
	_, err = f.tb.Recover(context.Background(), again, f.fail(t, again), chain(cachedStep(10*time.Minute)), f.hooks)
	wantKind(t, err, Transport)
	other := approve(t, f.tb, "primary", `{"a":2}`)
	_, err = f.tb.Recover(context.Background(), other, errors.New("x"), chain(cachedStep(0)), f.hooks)
	if err == nil {
		t.Error("a cached result for other arguments was used")
	}
	if diff := cmp.Diff([]string{"cached_result#1 transport", "cached_result#1 transport", "cached_result#1 error"}, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestLLMRecoveryAsksTheModelAtMostMaxAttempts(t *testing.T) {
	f := newRecoveryFixture(t, []int{500, 500, 500}, nil)
	call := approve(t, f.tb, "primary", `{"q":1}`)
	ch := chain(llmStep(2), deadLetterStep())
	for i := 0; i < 2; i++ {
		_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), ch, f.hooks)
		var fl *Failure
		if !errors.As(err, &fl) || !fl.AsksModel() || fl.Kind != Transport {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
		if !strings.Contains(fl.Hint, "primary failed (transport)") || !strings.Contains(fl.Hint, "different approach") {
			t.Errorf("hint %q", fl.Hint)
		}
	}
	_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), ch, f.hooks)
	if !errors.Is(err, ErrDeadLettered) {
		t.Errorf("third time: %v, want the chain to pass on to dead_letter", err)
	}
	var fl *Failure
	if errors.As(err, &fl) && fl.AsksModel() {
		t.Error("dead-lettered failure still asks the model")
	}
}

func TestEscalate(t *testing.T) {
	t.Run("approved runs the call again", func(t *testing.T) {
		f := newRecoveryFixture(t, []int{500}, nil)
		call := approve(t, f.tb, "primary", `{}`)
		var gotQueue string
		f.hooks.Escalate = func(ctx context.Context, queue string, timeout time.Duration, failure error) (bool, error) {
			gotQueue = queue
			if _, ok := ctx.Deadline(); !ok || timeout != time.Minute {
				t.Error("escalation without its timeout")
			}
			return true, nil
		}
		r, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(escalateStep()), f.hooks)
		if err != nil || gotQueue != "ops" || !strings.Contains(r.Content, `"call":2`) {
			t.Errorf("%+v %v queue %q", r, err, gotQueue)
		}
	})
	t.Run("rejected ends the chain", func(t *testing.T) {
		f := newRecoveryFixture(t, []int{500}, nil)
		call := approve(t, f.tb, "primary", `{}`)
		f.hooks.Escalate = func(context.Context, string, time.Duration, error) (bool, error) { return false, nil }
		_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(escalateStep(), deadLetterStep()), f.hooks)
		if !errors.Is(err, ErrEscalationDenied) || errors.Is(err, ErrDeadLettered) {
			t.Errorf("error %v", err)
		}
		if KindOf(err) != Transport {
			t.Errorf("kind %s", KindOf(err))
		}
	})
	t.Run("timeout passes to the next strategy", func(t *testing.T) {
		f := newRecoveryFixture(t, []int{500}, nil)
		call := approve(t, f.tb, "primary", `{}`)
		f.hooks.Escalate = func(ctx context.Context, _ string, _ time.Duration, _ error) (bool, error) {
			return false, context.DeadlineExceeded
		}
		_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(escalateStep(), deadLetterStep()), f.hooks)
		if !errors.Is(err, ErrDeadLettered) {
			t.Errorf("error %v", err)
		}
		if diff := cmp.Diff([]string{"escalate#1 transport", "escalate#1 transport", "dead_letter#1 transport"}, f.ev.list()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

func readDeadLetters(t *testing.T, path string) []deadLetterLine {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []deadLetterLine
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		var l deadLetterLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

func TestDeadLetter(t *testing.T) {
	f := newRecoveryFixture(t, []int{404}, nil)
	call := approve(t, f.tb, "primary", `{"z":1, "a":"x"}`)
	_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(deadLetterStep()), f.hooks)
	fl := wantKind(t, err, Error)
	if !errors.Is(err, ErrDeadLettered) || !strings.Contains(fl.Error(), "HTTP 404") {
		t.Errorf("error %v", err)
	}
	lines := readDeadLetters(t, filepath.Join(f.state, plan.DefaultDeadLetterPath))
	want := []deadLetterLine{{Time: f.clock.Now(), Tool: "primary", Arguments: json.RawMessage(`{"a":"x","z":1}`), Kind: Error, Error: "primary: error: HTTP 404: failing on purpose"}}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("dead letters (-want +got):\n%s", diff)
	}
}

// A dead letter's arguments read as the model wrote them: <, > and & are not
// escaped as \u003c and the like, in the file's bytes as well as its value.
func TestDeadLetterKeepsHTMLCharacters(t *testing.T) {
	f := newRecoveryFixture(t, []int{404}, nil)
	call := approve(t, f.tb, "primary", `{"q":"<a & b>"}`)
	if _, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(deadLetterStep()), f.hooks); !errors.Is(err, ErrDeadLettered) {
		t.Fatalf("Recover err = %v, want ErrDeadLettered", err)
	}
	path := filepath.Join(f.state, plan.DefaultDeadLetterPath)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"arguments":{"q":"<a & b>"}`) || strings.Contains(string(data), `\u00`) {
		t.Errorf("dead letter %s: want the arguments written as {\"q\":\"<a & b>\"}", data)
	}
	if lines := readDeadLetters(t, path); len(lines) != 1 || string(lines[0].Arguments) != `{"q":"<a & b>"}` {
		t.Errorf("dead letters = %s, want one line with arguments {\"q\":\"<a & b>\"}", data)
	}
}

// A dead letter passes through Options.Redact, whole, before it is
// written: the engine's redactor takes the secrets out of the arguments
// and the error.
func TestDeadLetterIsRedacted(t *testing.T) {
	f := newRecoveryFixture(t, []int{404}, nil)
	var seen []string
	f.tb.opts.Redact = func(line []byte) []byte {
		seen = append(seen, string(line))
		return bytes.ReplaceAll(line, []byte("tok-s3cret"), []byte("[redacted]"))
	}
	call := approve(t, f.tb, "primary", `{"q":"tok-s3cret"}`)
	if _, err := f.tb.Recover(context.Background(), call, f.fail(t, call), chain(deadLetterStep()), f.hooks); !errors.Is(err, ErrDeadLettered) {
		t.Fatalf("Recover err = %v, want ErrDeadLettered", err)
	}
	data, err := os.ReadFile(filepath.Join(f.state, plan.DefaultDeadLetterPath))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || !json.Valid([]byte(seen[0])) || !strings.Contains(seen[0], "tok-s3cret") {
		t.Errorf("Redact saw %q, want the one line, as JSON", seen)
	}
	if strings.Contains(string(data), "tok-s3cret") || !strings.Contains(string(data), `"arguments":{"q":"[redacted]"}`) || strings.Count(string(data), "\n") != 1 {
		t.Errorf("dead letter %s", data)
	}
}

func TestFullChainInOrder(t *testing.T) {
	// Everything fails: the primary, its retries, the fallback, no cache,
	// the model was already asked once, the person does not answer.
	f := newRecoveryFixture(t, []int{500, 500, 500}, []int{503})
	call := approve(t, f.tb, "primary", `{"q":"x"}`)
	ch := chain(retryStep(3), fallbackStep("tool.backup"), cachedStep(time.Hour), llmStep(1), escalateStep(), deadLetterStep())
	f.hooks.Escalate = func(context.Context, string, time.Duration, error) (bool, error) {
		return false, errors.New("no one answered")
	}

	_, err := f.tb.Recover(context.Background(), call, f.fail(t, call), ch, f.hooks)
	var fl *Failure
	if !errors.As(err, &fl) || !fl.AsksModel() {
		t.Fatalf("first pass ends at llm_recovery: %v", err)
	}
	want := []string{"retry#1 transport", "retry#2 transport", "fallback#1 transport", "cached_result#1 transport", "llm_recovery#1 transport"}
	if diff := cmp.Diff(want, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	f.primary.set(500, 500, 500)
	f.backup.set(503)
	f.ev.log = nil
	_, err = f.tb.Recover(context.Background(), call, f.fail(t, call), ch, f.hooks)
	if !errors.Is(err, ErrDeadLettered) {
		t.Fatalf("second pass ends at dead_letter: %v", err)
	}
	want = []string{"retry#1 transport", "retry#2 transport", "fallback#1 transport", "cached_result#1 transport",
		"llm_recovery#2 transport", "escalate#1 transport", "escalate#1 transport", "dead_letter#1 transport"}
	if diff := cmp.Diff(want, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := len(readDeadLetters(t, filepath.Join(f.state, plan.DefaultDeadLetterPath))); n != 1 {
		t.Errorf("%d dead letters", n)
	}
}

func TestCircuitOpenFallsBack(t *testing.T) {
	f := newRecoveryFixture(t, nil, nil)
	primary := breakerTool(f.primary.URL)
	primary.Address = "tool.primary"
	primary.CircuitBreaker.FailureThreshold = 1
	f.primary.set(500)
	tb := newToolbox(t, []plan.Tool{primary, httpTool("backup", f.backup.URL, "POST")}, nil, Options{Now: f.clock.Now, Sleep: f.clock.Sleep})
	f.hooks.Gate = gateFunc(allowAll(t, tb))
	call := approve(t, tb, "primary", `{}`)
	tb.Call(context.Background(), call)
	_, err := tb.Call(context.Background(), call)
	wantKind(t, err, CircuitOpen)
	// circuit_open is not in the default retry kinds: retry passes on at
	// once, and the fallback answers.
	r, err := tb.Recover(context.Background(), call, err, chain(retryStep(3), fallbackStep("tool.backup")), f.hooks)
	if err != nil || r.Tool != "backup" {
		t.Fatalf("%+v %v", r, err)
	}
	if f.primary.Calls() != 1 {
		t.Errorf("the open circuit let %d calls through", f.primary.Calls())
	}
	if diff := cmp.Diff([]string{"retry#1 circuit_open", "fallback#1 circuit_open"}, f.ev.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestRecoverStopsWhenCancelled(t *testing.T) {
	f := newRecoveryFixture(t, []int{500}, nil)
	call := approve(t, f.tb, "primary", `{}`)
	failure := f.fail(t, call)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.tb.Recover(ctx, call, failure, chain(retryStep(3), deadLetterStep()), f.hooks)
	if err != failure || f.primary.Calls() != 1 {
		t.Errorf("cancelled recovery ran on: %v, %d calls", err, f.primary.Calls())
	}
}
