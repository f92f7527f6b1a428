package builtins

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// BenchmarkValidate measures the per-call schema check (the schema is
// compiled once, in NewToolbox).
func BenchmarkValidate(b *testing.B) {
	tool := plan.Tool{
		Address:    "tool.search",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","maximum":10}},"required":["query"]}`),
		Executor:   plan.Executor{Kind: "builtin", Builtin: "calculator"},
	}
	tb := newToolbox(b, []plan.Tool{tool}, nil, Options{})
	args := json.RawMessage(`{"query":"sea otters","limit":5}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := tb.Validate("search", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallCalculator is the toolbox's overhead around the cheapest tool.
func BenchmarkCallCalculator(b *testing.B) {
	tb := newToolbox(b, []plan.Tool{builtinTool("calculator")}, nil, Options{})
	call := approve(b, tb, "calculator", `{"expression":"(1 + 2) * 3 ^ 2 - 4 / 5"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tb.Call(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDispatch8 dispatches eight calculator calls, four at a time.
func BenchmarkDispatch8(b *testing.B) {
	tb := newToolbox(b, []plan.Tool{builtinTool("calculator")}, nil, Options{})
	calls := make([]policy.Approved, 8)
	for i := range calls {
		calls[i] = approve(b, tb, "calculator", `{"expression":"6 * 7"}`)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, o := range tb.Dispatch(ctx, calls, 4, 0) {
			if o.Err != nil {
				b.Fatal(o.Err)
			}
		}
	}
}
