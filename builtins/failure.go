package builtins

import (
	"errors"
	"fmt"
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
}

func (f *Failure) Error() string {
	if f.Err == nil {
		return fmt.Sprintf("%s: %s", f.Tool, f.Kind)
	}
	return fmt.Sprintf("%s: %s: %v", f.Tool, f.Kind, f.Err)
}

func (f *Failure) Unwrap() error { return f.Err }

// KindOf returns the failure kind of err; an unclassified error is Error.
func KindOf(err error) FailureKind {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return Error
}
