package opaproc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/policy/opa"
)

// benchRego is a gate of the usual shape: a default, a few rules over the
// action and the run, data.
const benchRego = `package symbi.gate

default decision := {"decision": "not_applicable"}

decision := {"decision": "allow", "reason": "searching is fine"} if input.action.tool == "web_search"

decision := {"decision": "deny", "reason": "over budget"} if {
	input.action.tool == "shell"
	input.run.usage.cost_usd > 0.5
}
`

func benchGates(b *testing.B) (local, remote policy.OPAGate, in policy.Input) {
	ctx := context.Background()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gate.rego"), []byte(benchRego), 0o644); err != nil {
		b.Fatal(err)
	}
	pol := plan.OPAPolicy{Modules: []plan.FileRef{plan.NewFileRef("gate.rego", []byte(benchRego))}, Query: "data.symbi.gate.decision"}
	local, err := opa.NewOPA(ctx, "policy.gate", pol, dir)
	if err != nil {
		b.Fatal(err)
	}
	c := newClient(b)
	if path := os.Getenv("SYMBI_OPA_HELPER"); path != "" { // the built symbi-opa, when given
		c.find = func() (string, error) { return path, nil }
		c.version = helperVersion(b, path)
	}
	remote, err = c.PrepareOPA(ctx, "policy.gate", pol, dir)
	if err != nil {
		b.Fatal(err)
	}
	in = policy.Input{
		Action:  policy.Action{Type: policy.ToolCall, Tool: "web_search", CallID: "c1", Arguments: []byte(`{"query":"symbi"}`), Effect: "read"},
		Agent:   policy.AgentInfo{Name: "researcher", Model: "fast"},
		Run:     policy.RunInfo{ID: "r", Iteration: 3, Usage: policy.Usage{ModelCalls: 3, CostUSD: 0.01}, Budget: map[string]any{"max_iterations": int64(20)}},
		Context: map[string]any{},
	}
	if d := remote.Decide(ctx, in); d.Outcome != policy.Allow {
		b.Fatalf("the helper decided %+v", d)
	}
	return local, remote, in
}

// helperVersion asks a built helper for its version.
func helperVersion(b *testing.B, path string) string {
	out, err := execOutput(path, "version")
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkDecide is one gate decision of an opa policy: in-process
// (policy/opa, as before symbi-opa) against through the helper, one
// goroutine at a time and from every core at once (the helper answers
// requests concurrently). SYMBI_OPA_HELPER=bin/symbi-opa measures the built
// helper; otherwise this test binary serves as the helper.
func BenchmarkDecide(b *testing.B) {
	local, remote, in := benchGates(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		g    policy.Gate
	}{{"in-process", local}, {"helper", remote}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if d := bc.g.Decide(ctx, in); d.Outcome != policy.Allow {
					b.Fatal(d)
				}
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if d := bc.g.Decide(ctx, in); d.Outcome != policy.Allow {
						b.Error(d)
						return
					}
				}
			})
		})
	}
}

// BenchmarkHelperStart is what the first opa policy of a process costs
// before it loads: starting the helper and its hello.
func BenchmarkHelperStart(b *testing.B) {
	c := newClient(b)
	if path := os.Getenv("SYMBI_OPA_HELPER"); path != "" {
		c.find = func() (string, error) { return path, nil }
		c.version = helperVersion(b, path)
	}
	ctx := context.Background()
	for range b.N {
		p, err := startProc(ctx, mustFind(b, c), c.version)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.stop(0)
	}
}

func mustFind(b *testing.B, c *Client) string {
	path, err := c.find()
	if err != nil {
		b.Fatal(err)
	}
	return path
}

func execOutput(path string, args ...string) (string, error) {
	out, err := exec.Command(path, args...).Output()
	return strings.TrimSpace(string(out)), err
}
