package builtins

import (
	"errors"
	"fmt"
	"testing"
)

func TestFailureMessageWithoutTool(t *testing.T) {
	inner := &Failure{Kind: Timeout, Err: errors.New("deadline exceeded")}
	outer := &Failure{Kind: Error, Tool: "nap", Err: fmt.Errorf("cancelled: %w", inner)}
	if got, want := outer.Error(), "nap: error: cancelled: timeout: deadline exceeded"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := (&Failure{Kind: CircuitOpen, Tool: "search"}).Error(), "search: circuit_open"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
