package engine

import (
	"testing"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/plan"
)

// TestEngineToolNamesAreReserved: the engine turns a call of these tools
// into an action; no MCP server's tool may take their names.
func TestEngineToolNamesAreReserved(t *testing.T) {
	for _, n := range []string{plan.DelegateTool, plan.TerminateTool} {
		if !builtins.ReservedToolName(n) {
			t.Errorf("%q is not reserved: an MCP server's tool could take it", n)
		}
	}
}
