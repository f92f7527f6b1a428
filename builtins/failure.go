package builtins

import (
	"errors"
	"fmt"
	"time"
)

// FailureKind classifies why a tool call failed.
type FailureKind string

const (
	Timeout          FailureKind = "timeout"
	Transport        FailureKind = "transport"
	RateLimited      FailureKind = "rate_limited"
	InvalidArguments FailureKind = "invalid_arguments"
	Error            FailureKind = "error"
	CircuitOpen      FailureKind = "circuit_open"
)

// Failure is a classified tool failure. Test the kind with errors.As.
type Failure struct {
	Kind FailureKind
	Tool string
	Err  error
	// RetryAfter is what a rate-limited server asked for (HTTP Retry-After);
	// the retry strategy waits at least this long.
	RetryAfter time.Duration
	// Hint is set when the llm_recovery strategy ended the chain: the model
	// is to try another approach, and Hint is what to tell it.
	Hint string
}

func (f *Failure) Error() string {
	msg := string(f.Kind)
	if f.Tool != "" {
		// An executor's failure is wrapped again with the tool's name; the
		// inner one has none, and must not print an empty segment.
		msg = f.Tool + ": " + msg
	}
	if f.Err == nil {
		return msg
	}
	return fmt.Sprintf("%s: %v", msg, f.Err)
}

func (f *Failure) Unwrap() error { return f.Err }

// AsksModel reports whether the failure is llm_recovery's request that the
// model try another approach (the engine then continues the loop).
func (f *Failure) AsksModel() bool { return f.Hint != "" }

// KindOf returns the failure kind of err; an unclassified error is Error.
func KindOf(err error) FailureKind {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return Error
}

// Sentinel causes, wrapped inside a *Failure. Test with errors.Is.
var (
	ErrUnknownTool      = errors.New("unknown tool")
	ErrNotApproved      = errors.New("action did not pass the gate")
	ErrHostNotAllowed   = errors.New("host not in the allow-list")
	ErrOutsideWorkspace = errors.New("path outside the workspace")
	ErrNoWorkspace      = errors.New("no workspace configured")
	ErrNotConfigured    = errors.New("not configured")
	ErrDeadLettered     = errors.New("recorded in the dead-letter file")
	ErrEscalationDenied = errors.New("a person rejected the escalation")
	// ErrEscalationTimeout is the cause (context.Cause) of the context an
	// escalation's question is asked under when its timeout ends it.
	ErrEscalationTimeout = errors.New("nobody answered the escalation in time")
)

// ExitError is a command tool that exited non-zero: its code and the tail of
// its stderr.
type ExitError struct {
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return fmt.Sprintf("exit status %d: %s", e.Code, e.Stderr)
}

// StatusError is an http tool's non-2xx response.
type StatusError struct {
	Code int
	Body string // the start of the body, bounded
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

func fail(kind FailureKind, tool string, err error) *Failure {
	return &Failure{Kind: kind, Tool: tool, Err: err}
}
