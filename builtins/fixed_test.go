package builtins

import (
	"context"
	"errors"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

// TestFixedExecutor: a fixed tool (a test's override_tool) answers with
// its output, cut at the tool's limit on a rune boundary, or fails with its
// error; its declared effect is what the gate sees.
func TestFixedExecutor(t *testing.T) {
	tools := []plan.Tool{
		{Address: "tool.shell", Effect: "destructive", MaxOutputBytes: 5, Executor: plan.Executor{Kind: "fixed", Fixed: &plan.FixedExec{Output: "abcdé, and more"}}},
		{Address: "tool.search", Effect: "read", Executor: plan.Executor{Kind: "fixed", Fixed: &plan.FixedExec{Error: "the index is down"}}},
	}
	tb, err := NewToolbox(context.Background(), tools, nil, Options{BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if info, _ := tb.Info("shell"); info.Effect != "destructive" {
		t.Errorf("effect %q, want the declared destructive", info.Effect)
	}
	res, err := tb.Call(context.Background(), approve(t, tb, "shell", `{"cmd":"rm -rf /"}`))
	if err != nil || res.Content != "abcd" || !res.Truncated {
		t.Errorf("shell: %q (truncated %t), %v; want the output cut before the é", res.Content, res.Truncated, err)
	}
	_, err = tb.Call(context.Background(), approve(t, tb, "search", `{}`))
	var f *Failure
	if !errors.As(err, &f) || f.Kind != Error || f.Err.Error() != "the index is down" {
		t.Errorf("search: %v", err)
	}
	if _, err := NewToolbox(context.Background(), []plan.Tool{{Address: "tool.x", Executor: plan.Executor{Kind: "fixed"}}}, nil, Options{BaseDir: t.TempDir()}); err == nil {
		t.Error("a fixed executor without its block was accepted")
	}
}
