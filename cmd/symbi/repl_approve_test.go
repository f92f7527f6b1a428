package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ergochat/readline"

	"github.com/symbi-dev/symbi/policy"
)

// ctrlC, typed, is Ctrl-C at a raw terminal: the read returns
// readline.ErrInterrupt.
const ctrlC = "\x03"

// typist is the person at the REPL: each line sent on typed is what the
// next read returns; shown receives every prompt displayed.
type typist struct {
	typed chan string
	shown chan string
}

func newTypist() (*typist, *lineInput) {
	p := &typist{typed: make(chan string), shown: make(chan string, 16)}
	in := &lineInput{
		read: func() (string, error) {
			line, ok := <-p.typed
			if !ok {
				return "", io.EOF
			}
			if line == ctrlC {
				return "", readline.ErrInterrupt
			}
			return line, nil
		},
		show: func(prompt string, _ bool) { p.shown <- prompt },
	}
	return p, in
}

// waitForLateLine waits until the read a timed-out prompt left running
// holds a line nobody has asked for yet.
func waitForLateLine(t *testing.T, in *lineInput) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		in.mu.Lock()
		held := in.pending != nil && len(in.pending) == 1
		in.mu.Unlock()
		if held {
			return
		}
	}
	t.Fatal("the late line never reached the pending read")
}

func approveAsync(a *lineApprover, ctx context.Context, req policy.Request) chan approval {
	done := make(chan approval, 1)
	go func() {
		rec, err := a.Approve(ctx, req)
		done <- approval{rec, err}
	}()
	return done
}

type approval struct {
	rec policy.ApprovalRecord
	err error
}

func TestLineApproverHonoursTheRequestTimeout(t *testing.T) {
	person, in := newTypist()
	var out strings.Builder
	a := &lineApprover{out: &out, by: "alice", input: in}
	shell := policy.Action{Type: policy.ToolCall, Tool: "shell"}

	// Nobody answers: the request's timeout denies it.
	start := time.Now()
	rec, err := a.Approve(context.Background(), policy.Request{ID: "r1", Action: shell, Timeout: 20 * time.Millisecond})
	if err != nil || rec.Approved || rec.Via != "timeout" || rec.By != "timeout" || !strings.Contains(rec.Reason, "nobody answered within 20ms") {
		t.Fatalf("unanswered request: %+v, %v", rec, err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("waited %s for a 20ms timeout", waited)
	}
	if !strings.Contains(out.String(), "nobody answered within 20ms") {
		t.Errorf("the person is not told the request timed out:\n%s", out.String())
	}

	// A "y" typed after that prompt gave up must not approve the next one,
	// which the person has not seen when typing it.
	person.typed <- "y"
	waitForLateLine(t, in)
	rec, err = a.Approve(context.Background(), policy.Request{ID: "r2", Action: shell, Timeout: 30 * time.Millisecond})
	if err != nil || rec.Approved || rec.Via != "timeout" {
		t.Fatalf("a late answer decided the next request: %+v, %v", rec, err)
	}

	// A line typed once the next prompt is shown answers it, even though
	// the read it arrives on was started for an earlier prompt.
	drain(person.shown)
	done := approveAsync(a, context.Background(), policy.Request{ID: "r3", Action: shell, Timeout: time.Minute})
	if p := <-person.shown; p != "Approve? [y/N] " {
		t.Fatalf("prompt %q", p)
	}
	person.typed <- "yes looks fine"
	if res := <-done; res.err != nil || !res.rec.Approved || res.rec.By != "alice" || res.rec.Reason != "looks fine" {
		t.Fatalf("answered request: %+v", res)
	}
}

func TestLineApproverHonoursExpiresAndCancellation(t *testing.T) {
	_, in := newTypist()
	a := &lineApprover{out: io.Discard, by: "alice", input: in}
	shell := policy.Action{Type: policy.ToolCall, Tool: "shell"}

	// Without a Timeout, Expires is the deadline (the REPL's :call sets it).
	rec, err := a.Approve(context.Background(), policy.Request{ID: "e1", Action: shell, Expires: time.Now().Add(20 * time.Millisecond)})
	if err != nil || rec.Approved || rec.Via != "timeout" {
		t.Fatalf("expired request: %+v, %v", rec, err)
	}

	// A deadline on asking (an escalation puts its timeout on ctx too) is a
	// timeout, not a failure to ask.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	rec, err = a.Approve(ctx, policy.Request{ID: "d1", Action: shell, Timeout: time.Minute})
	if err != nil || rec.Approved || rec.Via != "timeout" {
		t.Fatalf("request under a deadline: %+v, %v", rec, err)
	}

	// A cancelled run is an error, not a decision.
	ctx, cancel = context.WithCancel(context.Background())
	done := approveAsync(a, ctx, policy.Request{ID: "c1", Action: shell})
	cancel()
	if res := <-done; !errors.Is(res.err, context.Canceled) {
		t.Fatalf("cancelled request: %+v", res)
	}
}

// After an approval gave up, the REPL's next input arrives on the read the
// approval left running, and is the input, not lost.
func TestLineInputHandsAnAbandonedReadToTheNextCaller(t *testing.T) {
	person, in := newTypist()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := in.next(ctx, "Approve? [y/N] "); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gave up with %v", err)
	}
	drain(person.shown)
	got := make(chan string, 1)
	go func() {
		line, _ := in.next(context.Background(), "> ")
		got <- line
	}()
	if p := <-person.shown; p != "> " {
		t.Fatalf("prompt %q", p)
	}
	person.typed <- "1 + 1"
	if line := <-got; line != "1 + 1" {
		t.Errorf("next input %q, want %q", line, "1 + 1")
	}

	// The end of input reaches the next caller even when nobody was asking.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	in.next(ctx, "Approve? [y/N] ")
	close(person.typed)
	waitForLateLine(t, in)
	if _, err := in.next(context.Background(), "> "); !errors.Is(err, io.EOF) {
		t.Errorf("after the input ended: %v, want io.EOF", err)
	}
}

func drain(c chan string) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestCtrlCAfterATimedOutPromptInterruptsTheInput: after an approval prompt
// times out, its read keeps the terminal (raw), so Ctrl-C arrives as a
// line; while an input runs it cancels that input, as SIGINT would. At a
// prompt that is waiting, Ctrl-C is that prompt's answer and cancels
// nothing.
func TestCtrlCAfterATimedOutPromptInterruptsTheInput(t *testing.T) {
	person, in := newTypist()
	interrupted := make(chan struct{}, 1)
	in.whileRunning(func() { interrupted <- struct{}{} })

	// Waiting at a prompt: Ctrl-C is its answer.
	got := make(chan error, 1)
	go func() {
		_, err := in.next(context.Background(), "Approve? [y/N] ")
		got <- err
	}()
	<-person.shown
	person.typed <- ctrlC
	if err := <-got; !errors.Is(err, readline.ErrInterrupt) {
		t.Fatalf("the prompt got %v, want readline.ErrInterrupt", err)
	}
	select {
	case <-interrupted:
		t.Fatal("Ctrl-C at a waiting prompt interrupted the input")
	default:
	}

	// The prompt timed out; its read still holds the terminal.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := in.next(ctx, "Approve? [y/N] "); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gave up with %v", err)
	}
	person.typed <- ctrlC
	select {
	case <-interrupted:
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-C read by nobody's prompt did not interrupt the running input")
	}
	// The next prompt does not see that Ctrl-C; it reads a new line.
	in.whileRunning(nil)
	drain(person.shown)
	next := make(chan string, 1)
	go func() {
		line, _ := in.next(context.Background(), "> ")
		next <- line
	}()
	if p := <-person.shown; p != "> " {
		t.Fatalf("prompt %q", p)
	}
	person.typed <- "1 + 1"
	if line := <-next; line != "1 + 1" {
		t.Errorf("next input %q, want %q", line, "1 + 1")
	}
}
