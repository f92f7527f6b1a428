package policy

import (
	"errors"
	"fmt"
)

// Sentinel errors, for errors.Is.
var (
	// ErrUnknownPolicy: an address that names no policy in the plan.
	ErrUnknownPolicy = errors.New("unknown policy")
	// ErrUndefinedQuery: an OPA query whose rule exists in no module and no data.
	ErrUndefinedQuery = errors.New("undefined query")
	// ErrNotAskable: Resolve was given a verdict no person may overturn (a deny).
	ErrNotAskable = errors.New("verdict does not ask a person")
	// ErrUnknownRequest: no pending approval request has that ID.
	ErrUnknownRequest = errors.New("no such approval request")
	// ErrAlreadyDecided: someone approved or denied the request first.
	ErrAlreadyDecided = errors.New("approval request already decided")
)

// LoadError is a policy that could not be prepared: a file that does not
// parse, compile or validate. File and Line locate it when the engine says
// where, so the message reads "policies/tools.rego:12: rego_parse_error: ...".
type LoadError struct {
	Policy string // policy address
	File   string // relative to the configuration directory
	Line   int
	Err    error
}

func (e *LoadError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	case e.File != "":
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Policy, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// LoadErrors are every problem found in one policy, so an author fixes them
// all at once.
type LoadErrors []*LoadError

func (es LoadErrors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	msg := fmt.Sprintf("%d problems:", len(es))
	for _, e := range es {
		msg += "\n\t" + e.Error()
	}
	return msg
}

func (es LoadErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// err returns nil for no errors, so a typed nil never becomes a non-nil error.
func (es LoadErrors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}
