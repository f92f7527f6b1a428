package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ergochat/readline"

	"github.com/symbi-dev/symbi/policy"
)

// lineInput is the REPL's one reader of its input, shared by the loop that
// reads inputs and the approver that reads answers. A read cannot be
// cancelled (readline and a script's scanner block until a line comes), so
// a caller that gives up (an approval that times out, a cancelled run)
// leaves its read running, and the next caller takes that read over rather
// than start a second one on the same input. What that read returned before
// anyone asked again was typed for a prompt that had given up: it is
// dropped, so a late "y" approves nothing it was not shown.
type lineInput struct {
	read func() (string, error) // blocks until the next line
	// show displays the prompt: before a read starts, or over the read in
	// flight that this caller takes over (reading).
	show func(prompt string, reading bool)

	mu      sync.Mutex     // one caller at a time: concurrent approvals queue up
	pending chan lineOrErr // the read a caller gave up on; nil when none

	// A read nobody waits for still owns the terminal (readline keeps it
	// raw), so Ctrl-C reaches it as a line, not as SIGINT. While an input
	// runs, such a Ctrl-C is the person interrupting that input: interrupt
	// (set by whileRunning) is called.
	wmu       sync.Mutex
	active    chan lineOrErr // the read a caller is waiting for now
	interrupt func()
}

// whileRunning sets what a Ctrl-C read by nobody's read does: cancel the
// input that runs (nil when none does).
func (in *lineInput) whileRunning(cancel func()) {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	in.interrupt = cancel
}

// waitFor records which read a caller is waiting for (nil: none).
func (in *lineInput) waitFor(ch chan lineOrErr) {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	in.active = ch
}

type lineOrErr struct {
	line string
	err  error
}

// next shows prompt and returns the next line, or ctx's error when ctx ends
// first.
func (in *lineInput) next(ctx context.Context, prompt string) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	ch := in.pending
	in.pending = nil
	if ch != nil {
		select {
		case l := <-ch:
			if l.err != nil && !errors.Is(l.err, readline.ErrInterrupt) {
				return "", l.err // the end of input stays the end of input
			}
			ch = nil // a late answer, or a Ctrl-C at a prompt that was gone
		default:
		}
	}
	if ch == nil {
		in.show(prompt, false)
		ch = make(chan lineOrErr, 1)
		in.waitFor(ch) // before the read starts: a Ctrl-C it returns is this prompt's
		go func() {
			line, err := in.read()
			in.wmu.Lock()
			defer in.wmu.Unlock()
			if in.active != ch && in.interrupt != nil && errors.Is(err, readline.ErrInterrupt) {
				in.interrupt()
			}
			ch <- lineOrErr{line, err}
		}()
	} else {
		in.waitFor(ch)
		in.show(prompt, true)
	}
	defer in.waitFor(nil)
	select {
	case l := <-ch:
		return l.line, l.err
	case <-ctx.Done():
		in.pending = ch
		in.show("", false) // the read goes on, but not for this prompt
		return "", ctx.Err()
	}
}

// promptedInput reads inputs for readInput from the shared input.
type promptedInput struct {
	ctx    context.Context
	in     *lineInput
	prompt string
}

func (p *promptedInput) SetPrompt(s string)        { p.prompt = s }
func (p *promptedInput) Readline() (string, error) { return p.in.next(p.ctx, p.prompt) }

// lineApprover asks the person at the REPL (or the script's next line)
// about an action a policy wants a person to decide, shown as
// policy.Prompt shows it: "y" or "yes" approves, anything else denies. Like policy.TerminalApprover it waits no
// longer than the request's Timeout (or, without one, its Expires, or the
// deadline of ctx), and a request nobody answered in time is denied; a
// cancelled ctx is an error.
type lineApprover struct {
	out   io.Writer
	by    string
	input *lineInput
	echo  bool // print the answer after the prompt: a script's lines are not echoed as typed
	// mu: one request on the screen at a time, so a "y" answers the
	// request shown above it (two escalations can ask at once).
	mu sync.Mutex
}

func (a *lineApprover) Approve(ctx context.Context, req policy.Request) (policy.ApprovalRecord, error) {
	if err := ctx.Err(); err != nil {
		return policy.ApprovalRecord{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprint(a.out, policy.Prompt(req.Prepared()))
	start := time.Now()
	wait, stop := ctx, context.CancelFunc(func() {})
	switch {
	case req.Timeout > 0:
		wait, stop = context.WithTimeout(ctx, req.Timeout)
	case !req.Expires.IsZero():
		wait, stop = context.WithDeadline(ctx, req.Expires)
	}
	defer stop()
	// What a timeout reports waiting: until the first of the request's
	// limit and the caller's deadline (an escalation puts its timeout on
	// both).
	var limit time.Duration
	if d, ok := wait.Deadline(); ok {
		// From start, not from now: on a loaded machine a 20ms timeout
		// has less than 19.5ms to go by the time it is read here.
		limit = d.Sub(start)
		if req.Timeout > 0 && limit >= req.Timeout {
			limit = req.Timeout // the request's own limit, as written
		}
		if limit >= time.Second {
			limit = limit.Round(time.Second)
		} else {
			limit = limit.Round(time.Millisecond)
		}
	}
	next := func(prompt string) (string, error) {
		line, err := a.input.next(wait, prompt)
		if err == nil && a.echo {
			fmt.Fprintln(a.out, line)
		}
		return line, err
	}
	rec, err := policy.Converse(a.out, req, next, policy.ApprovalRecord{ID: req.ID, By: a.by, Via: "terminal"}, time.Now)
	switch {
	case err == nil:
		return rec, nil
	case errors.Is(err, context.DeadlineExceeded):
		// The request's own limit, or a deadline the caller put on asking
		// (an escalation's timeout): either way nobody answered in time.
		rec = policy.TimeoutRecord(req.ID, limit, time.Now())
		fmt.Fprintf(a.out, "\n%s\n", rec.Reason)
		return rec, nil
	case ctx.Err() != nil:
		fmt.Fprintln(a.out)
		return policy.ApprovalRecord{}, ctx.Err()
	}
	if a.echo {
		fmt.Fprintln(a.out)
	}
	return policy.ApprovalRecord{ID: req.ID, By: a.by, Via: "terminal", At: time.Now(), Reason: "no answer (denied)"}, nil
}
