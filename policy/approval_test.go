package policy

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// fakeClock advances by step every time it is read, so a timeout arrives
// after a known number of polls without waiting for it.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.t
	c.t = c.t.Add(c.step)
	return now
}

func newQueueApprover(t *testing.T, clock *fakeClock) (*QueueApprover, *Queue) {
	q := NewQueue(t.TempDir())
	if clock != nil {
		q.Now = clock.Now
	}
	return &QueueApprover{Queue: q, Timeout: time.Hour, Interval: time.Millisecond, NewID: func() string { return "req1" }}, q
}

// waitPending waits until the approver has submitted its request.
func waitPending(t *testing.T, q *Queue) Request {
	t.Helper()
	for {
		reqs, err := q.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) > 0 {
			return reqs[0]
		}
		time.Sleep(time.Millisecond)
	}
}

type approveResult struct {
	rec ApprovalRecord
	err error
}

func approveAsync(ctx context.Context, a Approver, req Request) <-chan approveResult {
	ch := make(chan approveResult, 1)
	go func() {
		rec, err := a.Approve(ctx, req)
		ch <- approveResult{rec, err}
	}()
	return ch
}

func TestQueueApproveAndDeny(t *testing.T) {
	for _, approved := range []bool{true, false} {
		a, q := newQueueApprover(t, nil)
		done := approveAsync(context.Background(), a, Request{Agent: "researcher", Action: toolCall("shell", `{"cmd":"rm x"}`), Reason: "rm needs a person"})
		req := waitPending(t, q)
		if req.ID != "req1" || req.Agent != "researcher" || req.Action.Tool != "shell" || !req.Expires.After(req.Created) {
			t.Fatalf("pending request %+v", req)
		}
		if _, err := q.Decide("req1", approved, "alice", "checked"); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		if res.rec.Approved != approved || res.rec.By != "alice" || res.rec.Via != "queue" || res.rec.Reason != "checked" || res.rec.At.IsZero() {
			t.Errorf("record %+v, want approved=%v by alice", res.rec, approved)
		}
		if _, err := os.Stat(q.requestPath("req1")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("request file left behind: %v", err)
		}
	}
}

func TestQueueTimeoutIsDeny(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: 10 * time.Minute}
	a, q := newQueueApprover(t, clock)
	rec, err := a.Approve(context.Background(), Request{Agent: "researcher", Action: toolCall("shell", `{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Approved || rec.Via != "timeout" || !strings.Contains(rec.Reason, "a timeout is a deny") {
		t.Errorf("record %+v, want a timeout deny", rec)
	}
	if _, err := q.Decide("req1", true, "late", ""); !errors.Is(err, ErrUnknownRequest) {
		t.Errorf("late approval: got %v, want ErrUnknownRequest", err)
	}
}

func TestQueueHonoursContext(t *testing.T) {
	a, q := newQueueApprover(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := approveAsync(ctx, a, Request{Agent: "researcher", Action: toolCall("shell", `{}`)})
	waitPending(t, q)
	cancel()
	if res := <-done; !errors.Is(res.err, context.Canceled) {
		t.Errorf("got %+v, want context.Canceled", res)
	}
	if reqs, _ := q.Pending(); len(reqs) != 0 {
		t.Errorf("a cancelled request is still pending: %+v", reqs)
	}
}

func TestQueueDecideErrors(t *testing.T) {
	q := NewQueue(t.TempDir())
	if err := q.Submit(Request{ID: "r2", Agent: "a", Action: toolCall("shell", `{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Decide("r2", true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Decide("r2", false, "bob", ""); !errors.Is(err, ErrAlreadyDecided) {
		t.Errorf("second decision: got %v, want ErrAlreadyDecided", err)
	}
	for _, id := range []string{"nope", "../etc/passwd", "", "a/b"} {
		if _, err := q.Decide(id, true, "alice", ""); !errors.Is(err, ErrUnknownRequest) {
			t.Errorf("Decide(%q): got %v, want ErrUnknownRequest", id, err)
		}
	}
	// Decided requests and stray temporary or torn files are not pending.
	os.WriteFile(filepath.Join(q.Dir, ".tmp-123"), []byte(`{"id":`), 0o644)
	os.WriteFile(filepath.Join(q.Dir, "torn.request.json"), []byte(`{"id":"torn",`), 0o644)
	if reqs, err := q.Pending(); err != nil || len(reqs) != 0 {
		t.Errorf("pending %+v %v, want none", reqs, err)
	}
}

func TestQueueConcurrentDecisionsOneWins(t *testing.T) {
	q := NewQueue(t.TempDir())
	if err := q.Submit(Request{ID: "race", Agent: "a", Action: toolCall("shell", `{}`)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := q.Decide("race", i%2 == 0, "p", "")
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, ErrAlreadyDecided) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d decisions won, want exactly 1", wins)
	}
}

func TestResolve(t *testing.T) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{Ask: []string{"shell"}, Deny: []string{"write_file"}}))
	c := NewChain(links(t, p, "policy.rules"), "deny", nil)
	ask := c.Gate(context.Background(), input(p, toolCall("shell", `{"cmd":"rm x"}`)))
	if !ask.Ask || ask.Approved.Valid() {
		t.Fatalf("want an ask verdict, got %+v", ask)
	}
	for _, approved := range []bool{true, false} {
		a, q := newQueueApprover(t, nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			waitPending(t, q)
			q.Decide("req1", approved, "alice", "")
		}()
		got, rec, err := c.Resolve(context.Background(), ask, a, Request{Agent: "researcher"})
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if got.Valid() != approved || rec.Approved != approved || rec.By != "alice" {
			t.Errorf("approved=%v: valid %v, record %+v", approved, got.Valid(), rec)
		}
		if approved {
			ds := got.Decisions()
			if len(ds) != 2 || ds[1].Engine != "person" || ds[1].Outcome != Allow || got.Action().Tool != "shell" {
				t.Errorf("approved decisions %+v", ds)
			}
		}
	}
	deny := c.Gate(context.Background(), input(p, toolCall("write_file", `{}`)))
	if _, _, err := c.Resolve(context.Background(), deny, nil, Request{}); !errors.Is(err, ErrNotAskable) {
		t.Errorf("resolving a deny: got %v, want ErrNotAskable", err)
	}
}

func TestTerminalApprover(t *testing.T) {
	req := Request{ID: "t1", Agent: "researcher", Action: toolCall("shell", `{"cmd":"rm x"}`), Reason: "rm needs a person"}
	for _, tc := range []struct {
		answer   string
		approved bool
		reason   string
	}{
		{"y\n", true, ""},
		{"YES fine by me\n", true, "fine by me"},
		{"n too risky\n", false, "too risky"},
		{"\n", false, "denied at the terminal by alice"},
		{"", false, "terminal closed"},
	} {
		var out strings.Builder
		a := NewTerminalApprover(strings.NewReader(tc.answer), &out, "alice")
		rec, err := a.Approve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Approved != tc.approved || !strings.Contains(rec.Reason, tc.reason) || rec.By != "alice" || rec.Via != "terminal" {
			t.Errorf("answer %q: record %+v", tc.answer, rec)
		}
		for _, want := range []string{`agent researcher wants to run tool_call "shell"`, `    cmd: "rm x"`, "digest " + ArgumentsDigest(req.Action), "rm needs a person", "[y/N]"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("prompt lacks %q: %s", want, out.String())
			}
		}
	}
}

func TestTerminalApproverTimeoutAndContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	a := NewTerminalApprover(r, io.Discard, "alice")
	a.Timeout = time.Millisecond
	rec, err := a.Approve(context.Background(), Request{Action: toolCall("shell", `{}`)})
	if err != nil || rec.Approved || rec.Via != "timeout" {
		t.Errorf("timeout: %+v %v", rec, err)
	}
	a.Timeout = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Approve(ctx, Request{Action: toolCall("shell", `{}`)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
	// A line typed after a prompt gave up answers nothing asked: the next
	// prompt, which the person has not seen yet, must not take it.
	io.WriteString(w, "y\n") // returns once the reader has read the line...
	// ...but it reaches the buffer a moment later: wait for it, so the
	// line is late for certain, not racing the prompt.
	for deadline := time.Now().Add(5 * time.Second); len(a.lines) < 1 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	a.Timeout = 20 * time.Millisecond
	if rec, err := a.Approve(context.Background(), Request{Action: toolCall("shell", `{}`)}); err != nil || rec.Approved {
		t.Errorf("a late answer approved the next prompt: %+v %v", rec, err)
	}
	// Every line typed while nobody asked is dropped, not only the first.
	a.Timeout = time.Millisecond
	a.Approve(context.Background(), Request{Action: toolCall("shell", `{}`)})
	io.WriteString(w, "y\ny\n")
	for deadline := time.Now().Add(5 * time.Second); len(a.lines) < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
	}
	a.Timeout = 20 * time.Millisecond
	if rec, err := a.Approve(context.Background(), Request{Action: toolCall("shell", `{}`)}); err != nil || rec.Approved {
		t.Errorf("a second late answer approved the next prompt: %+v %v", rec, err)
	}
	// A line typed after the prompt is shown answers it.
	a.Timeout = 0
	prompted := make(chan struct{}, 1)
	a.Out = promptWriter{prompted}
	done := approveAsync(context.Background(), a, Request{Action: toolCall("shell", `{}`)})
	<-prompted
	io.WriteString(w, "y\n")
	if res := <-done; res.err != nil || !res.rec.Approved {
		t.Errorf("next prompt: %+v", res)
	}
}

// promptWriter signals when the approval prompt has been written.
type promptWriter struct{ prompted chan<- struct{} }

func (p promptWriter) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "[y/N]") {
		select {
		case p.prompted <- struct{}{}:
		default:
		}
	}
	return len(b), nil
}

func TestQueueWithdrawTakesOnlyThatRunsRequests(t *testing.T) {
	q := NewQueue(t.TempDir())
	now := time.Now()
	for _, r := range []Request{
		{ID: "old1", RunID: "run-a", Agent: "a", Action: toolCall("shell", `{}`), Created: now, Expires: now.Add(time.Hour)},
		{ID: "old2", RunID: "run-a.d1", Agent: "b", Action: toolCall("shell", `{}`), Created: now, Expires: now.Add(time.Hour)},
		{ID: "other", RunID: "run-ab", Agent: "a", Action: toolCall("shell", `{}`), Created: now, Expires: now.Add(time.Hour)},
	} {
		if err := q.Submit(r); err != nil {
			t.Fatal(err)
		}
	}
	n, err := q.Withdraw("run-a")
	if err != nil || n != 2 {
		t.Fatalf("Withdraw = %d, %v", n, err)
	}
	pending, err := q.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].ID != "other" {
		t.Errorf("pending after withdraw: %+v", pending)
	}
	if _, err := q.Decide("old1", true, "alice", ""); !errors.Is(err, ErrUnknownRequest) {
		t.Errorf("approving a withdrawn request: %v, want ErrUnknownRequest", err)
	}
}

// The end of input after a prompt gave up reaches the next prompt as a
// closed terminal (a deny), and no prompt after it panics.
func TestTerminalApproverEndOfInputAfterATimeout(t *testing.T) {
	r, w := io.Pipe()
	a := NewTerminalApprover(r, io.Discard, "alice")
	a.Timeout = time.Millisecond
	a.Approve(context.Background(), Request{Action: toolCall("shell", `{}`)})
	w.Close()
	for range 3 {
		rec, err := a.Approve(context.Background(), Request{Action: toolCall("shell", `{}`)})
		if err != nil || rec.Approved || (rec.Via != "timeout" && !strings.Contains(rec.Reason, "terminal closed")) {
			t.Errorf("after the end of input: %+v %v", rec, err)
		}
	}
}

// ApproveEdited approves a person's edited arguments only as the chain
// decided them again: an allow as it is; an ask by the person's approval,
// and only of exactly the arguments the person approved; never a deny.
// ApproveStanding answers an ask a remembered rule covers, never a deny,
// nor a call outside the rule or after its end.
func TestApproveEditedAndStanding(t *testing.T) {
	ctx := context.Background()
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{Ask: []string{"shell"}, Deny: []string{"shell:cmd=rm*"}, Allow: []string{"echo"}}))
	c := NewChain(links(t, p, "policy.rules"), "deny", nil)
	rec := ApprovalRecord{ID: "q", Approved: true, By: "alice", Via: "queue", Arguments: []byte(`{"cmd":"ls"}`)}

	ask := c.Gate(ctx, input(p, toolCall("shell", `{"cmd": "ls"}`)))
	got, err := c.ApproveEdited(ask, rec)
	if err != nil || !got.Valid() || digestJSON(DecidedArguments(got.Action())) != digestJSON([]byte(`{"cmd":"ls"}`)) {
		t.Fatalf("an ask on the person's arguments: %v %+v", err, got)
	}
	if ds := got.Decisions(); len(ds) != 2 || ds[1].Engine != "person" || ds[1].Outcome != Allow {
		t.Errorf("decisions %+v: want the policy's ask, then the person's allow", ds)
	}
	other := c.Gate(ctx, input(p, toolCall("shell", `{"cmd":"ls -la"}`)))
	if _, err := c.ApproveEdited(other, rec); !errors.Is(err, ErrNotAskable) {
		t.Errorf("an ask on other arguments than the person approved: %v, want ErrNotAskable", err)
	}
	deny := c.Gate(ctx, input(p, toolCall("shell", `{"cmd":"rm -rf /"}`)))
	if _, err := c.ApproveEdited(deny, ApprovalRecord{Approved: true, By: "alice", Arguments: []byte(`{"cmd":"rm -rf /"}`)}); !errors.Is(err, ErrNotAskable) {
		t.Errorf("approving edited arguments a policy denies: %v, want ErrNotAskable", err)
	}
	no := rec
	no.Approved = false
	if _, err := c.ApproveEdited(ask, no); !errors.Is(err, ErrNotAskable) {
		t.Errorf("a refusal approved: %v", err)
	}
	allow := c.Gate(ctx, input(p, toolCall("echo", `{"text":"hi"}`)))
	if got, err := c.ApproveEdited(allow, ApprovalRecord{Approved: true, By: "alice", Arguments: []byte(`{"text":"hi"}`)}); err != nil || !got.Valid() {
		t.Errorf("edited arguments the policies allow: %v", err)
	}

	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rule, err := NewStanding(toolCall("shell", `{"cmd":"ls"}`), []string{"cmd=ls*"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	person := ApprovalRecord{Approved: true, By: "alice", Via: "standing"}
	if got, err := c.ApproveStanding(other, rule, person, now); err != nil || !got.Valid() {
		t.Errorf("an ask the rule covers: %v", err)
	}
	if _, err := c.ApproveStanding(other, rule, person, now.Add(time.Hour)); !errors.Is(err, ErrNotAskable) {
		t.Errorf("a rule at its end: %v, want ErrNotAskable", err)
	}
	wide, _ := NewStanding(toolCall("shell", `{"cmd":"rm x"}`), []string{"cmd=*"}, time.Time{})
	if _, err := c.ApproveStanding(deny, wide, person, now); !errors.Is(err, ErrNotAskable) {
		t.Errorf("a rule answered a deny: %v, want ErrNotAskable", err)
	}
	pwd := c.Gate(ctx, input(p, toolCall("shell", `{"cmd":"pwd"}`)))
	if _, err := c.ApproveStanding(pwd, rule, person, now); !errors.Is(err, ErrNotAskable) {
		t.Errorf("a call outside the rule: %v, want ErrNotAskable", err)
	}
}
