package policy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// TerminalApprover asks the person at the terminal: it prints the request
// (Prompt: bounded, escaped, with the arguments' digest) and reads one line; "y" or "yes" approves, anything else denies (the rest
// of the line after "n" is the reason).
type TerminalApprover struct {
	Out io.Writer
	By  string // who answers: $USER
	// Timeout is how long to wait for an answer; zero waits for ctx alone.
	Timeout time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	in    io.Reader
	once  sync.Once
	lines chan lineOrErr // the reader's lines, read ahead; closed at the end of input
	mu    sync.Mutex     // one prompt at a time: concurrent tool calls queue up
	// unanswered: the last prompt ended (timeout, cancellation) without
	// taking a line, so a line typed since answers nothing asked now.
	unanswered bool
}

type lineOrErr struct {
	line string
	err  error
}

// NewTerminalApprover reads answers from in and writes prompts to out.
func NewTerminalApprover(in io.Reader, out io.Writer, by string) *TerminalApprover {
	return &TerminalApprover{in: in, Out: out, By: by}
}

// start reads lines in one goroutine for the approver's lifetime, because a
// read from a terminal cannot be cancelled: a prompt that times out leaves
// the read pending. Lines are read ahead into a buffer, so a prompt can drop
// every line typed while nobody was asking (discardLateAnswers).
func (t *TerminalApprover) start() {
	lines := make(chan lineOrErr, 64)
	t.lines = lines
	go func() {
		defer close(lines)
		r := bufio.NewReader(t.in)
		for {
			line, err := r.ReadString('\n')
			if line == "" && err != nil {
				lines <- lineOrErr{err: err}
				return
			}
			lines <- lineOrErr{line: line}
		}
	}()
}

// discardLateAnswers drops the lines typed after an earlier prompt had
// given up: a "y" meant for that prompt must not approve the one about to
// be shown, which the person has not seen yet.
func (t *TerminalApprover) discardLateAnswers() {
	for {
		select {
		case l, ok := <-t.lines:
			if !ok || l.err != nil {
				return // the end of input: the closed channel tells the prompt
			}
		default:
			return
		}
	}
}

func (t *TerminalApprover) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Approve prompts and converses (Converse) until an answer, the timeout,
// or ctx: the timeout bounds the whole conversation, an edit or a rule
// included.
func (t *TerminalApprover) Approve(ctx context.Context, req Request) (ApprovalRecord, error) {
	if t.in == nil || t.Out == nil {
		return ApprovalRecord{}, errors.New("terminal approver: made without NewTerminalApprover")
	}
	t.once.Do(t.start)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.unanswered {
		t.discardLateAnswers()
	}
	timeout := t.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	fmt.Fprint(t.Out, "\nsymbi: "+Prompt(req.Prepared()))
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	errExpired := errors.New("expired")
	next := func(prompt string) (string, error) {
		fmt.Fprint(t.Out, prompt)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-expired:
			return "", errExpired
		case l, ok := <-t.lines:
			if !ok || l.err != nil {
				return "", ErrAnswer
			}
			return l.line, nil
		}
	}
	rec, err := Converse(t.Out, req, next, ApprovalRecord{ID: req.ID, By: t.By, Via: "terminal"}, t.now)
	t.unanswered = err != nil && !errors.Is(err, ErrAnswer)
	switch {
	case err == nil:
		return rec, nil
	case errors.Is(err, errExpired):
		fmt.Fprintln(t.Out)
		return TimeoutRecord(req.ID, timeout, t.now()), nil
	case errors.Is(err, ErrAnswer):
		return ApprovalRecord{ID: req.ID, By: t.By, Via: "terminal", At: t.now(), Reason: "the terminal closed before an answer (denied)"}, nil
	}
	fmt.Fprintln(t.Out)
	return ApprovalRecord{}, err
}

// ParseAnswer reads a person's answer to "Approve? [y/N]": "y" or "yes"
// (any case) approves, anything else denies; the rest of the line after
// the first word is the reason.
func ParseAnswer(line string) (approved bool, reason string) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch strings.ToLower(word) {
	case "y", "yes":
		approved = true
	}
	return approved, strings.TrimSpace(rest)
}
