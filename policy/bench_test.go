package policy

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// Run: go test ./policy -run '^$' -bench . -benchtime 2000x
//
// Each benchmark times every iteration and reports the median as p50-ns,
// because the SPEC's targets are medians and a mean hides nothing useful
// here but GC pauses.

func p50(b *testing.B, samples []time.Duration) float64 {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	return float64(samples[len(samples)/2].Nanoseconds())
}

func benchGate(b *testing.B, g Gate, in Input, want Outcome) {
	ctx := context.Background()
	if d := g.Decide(ctx, in); d.Outcome != want {
		b.Fatalf("got %s %q, want %s", d.Outcome, d.Reason, want)
	}
	samples := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		g.Decide(ctx, in)
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(p50(b, samples), "p50-ns")
}

func BenchmarkGateCedar(b *testing.B) {
	p := cedarPlan(true, file("policies/tools.cedar", toolsCedar))
	benchGate(b, mustGate(b, p, "policy.access"), input(p, toolCall("web_search", `{"query":"symbi"}`)), Allow)
}

func BenchmarkGateRules(b *testing.B) {
	p := testPlan(rulesPolicy("policy.rules", plan.RulesPolicy{
		Deny:  []string{"shell:cmd=sudo*", "write_file:path=/etc/*"},
		Ask:   []string{"write_*"},
		Allow: []string{"calculator", "read_*", "web_search"},
	}))
	benchGate(b, mustGate(b, p, "policy.rules"), input(p, toolCall("web_search", `{"query":"symbi"}`)), Allow)
}

// cedarScalePlan is a plan of many tools and many Cedar policies, every
// policy with the same schema and entities file, as a large configuration
// has.
func cedarScalePlan(policies, tools int) *plan.Plan {
	p := testPlan()
	for i := range tools {
		p.Tools = append(p.Tools, plan.Tool{Address: fmt.Sprintf("tool.t%04d", i), Effect: "read", Tags: []string{"bulk"}, Approval: "policy"})
	}
	schema := file("policies/symbi.cedarschema", toolsSchema)
	ents := file("policies/entities.json", entitiesJSON)
	for i := range policies {
		pol := cedarPolicy(fmt.Sprintf("policy.c%03d", i), file(fmt.Sprintf("policies/c%03d.cedar", i), toolsCedar))
		pol.Cedar.Schema = &schema
		pol.Cedar.Entities = &ents
		p.Policies = append(p.Policies, pol)
	}
	p.Sort()
	return p
}

// BenchmarkCedarCompile prepares 50 Cedar policies over 500 tools: through
// one Loader, which derives the plan's entities and checks them against the
// schema once, and through FromPlan per policy, which does both for each.
// Before the Loader, preparing them cost what FromPlan-each still costs.
func BenchmarkCedarCompile(b *testing.B) {
	p := cedarScalePlan(50, 500)
	ctx := context.Background()
	dir := b.TempDir()
	b.Run("Loader", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			l := NewLoader(p, dir)
			for _, pol := range p.Policies {
				if _, err := l.Gate(ctx, pol.Address); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("FromPlan-each", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			for _, pol := range p.Policies {
				if _, err := FromPlan(ctx, p, pol.Address, dir); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
