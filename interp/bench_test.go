package interp

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
)

// generated writes a configuration of n agents, each with its own tool,
// rules policy and budget, around two shared models and a router.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString(`model "fast" {
  provider = "openai"
  name     = "gpt-4o-mini"
  pricing {
    input_usd_per_mtok  = 0.15
    output_usd_per_mtok = 0.60
  }
}

model "offline" {
  provider = "scripted"
  script   = "s.json"
  pricing {
    input_usd_per_mtok  = 0
    output_usd_per_mtok = 0
  }
}

router "balanced" {
  models = [model.fast, model.offline]
}
`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `
tool "search_%[1]d" {
  description = "Search corpus %[1]d"
  parameters = {
    type       = "object"
    properties = { query = { type = "string" } }
    required   = ["query"]
  }
  command {
    argv = ["./search.sh", "%[1]d"]
  }
  effect  = "read"
  timeout = "10s"
}

policy "rules_%[1]d" {
  rules {
    deny  = ["search_%[1]d:query=*secret*"]
    allow = ["search_%[1]d", "calculator"]
  }
}

budget "b_%[1]d" {
  max_iterations   = 10
  max_total_tokens = 50000
  max_cost_usd     = 0.25
  timeout          = "2m"
}

agent "agent_%[1]d" {
  description = "Agent number %[1]d"
  model       = router.balanced
  tools       = [tool.search_%[1]d]
  policies    = [policy.rules_%[1]d]
  budget      = budget.b_%[1]d
  loop {
    mode         = "react"
    tool_timeout = "20s"
  }
  context {
    strategy     = "sliding_window"
    token_budget = 16000
  }
}
`, i)
	}
	return []byte(b.String())
}

// BenchmarkCompile measures what symbi plan does (parse, decode, resolve,
// check, build the plan, encode the canonical JSON; validate is the same
// compilation; the REPL's scope is not built) of generated configurations, and reports it as a ratio to
// parsing the same bytes with hclsyntax alone ("x-parse"), both measured in
// the same run.
//
//	go test -run='^$' -bench=BenchmarkCompile -benchtime=3x ./interp/
func BenchmarkCompile(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000, 10000} {
		src := generated(n)
		name := filepath.Join(dir, "main.hcl")
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) {
			// Each iteration times a parse and a compile back to back; the
			// median of their ratios is robust to a machine whose load
			// changes during the run.
			var ratios, compiles []float64
			for i := 0; i < b.N; i++ {
				// Start both measurements from a clean heap, so neither pays
				// for the other's garbage.
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				t0 := time.Now()
				if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
					b.Fatal(diags)
				}
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				t1 := time.Now()
				cfg, diags := compileSources(dir, []lang.Source{{Name: name, Bytes: src}}, Options{LookupEnv: noEnv, NoScope: true})
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				if _, err := plan.Encode(cfg.Plan); err != nil {
					b.Fatal(err)
				}
				compile, parse := time.Since(t1), t1.Sub(t0)
				ratios = append(ratios, float64(compile)/float64(parse))
				compiles = append(compiles, float64(compile.Microseconds())/1000)
			}
			b.ReportMetric(median(ratios), "x-parse")
			b.ReportMetric(median(compiles), "ms-compile")
			b.ReportMetric(float64(len(src))/1e6, "MB")
		})
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkCompileGrowth measures how compile cost grows with the number of
// blocks (SPEC: 10x the blocks, at most 11x the time). Each iteration
// compiles the 1,000-agent and the 10,000-agent configurations back to
// back, each from a clean heap, so load from other processes hits both
// halves of a pair alike; it reports the median of the per-pair time ratios
// (x-time) and the ratio of bytes allocated (x-alloc), which does not
// depend on the machine's load at all, and the growth of hclsyntax parsing
// alone (x-parse-time) measured the same way.
func BenchmarkCompileGrowth(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"turns":[]}`), 0o644); err != nil {
		b.Fatal(err)
	}
	name := filepath.Join(dir, "main.hcl")
	small, large := generated(1000), generated(10000)
	compile := func(src []byte) (time.Duration, uint64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		cfg, diags := compileSources(dir, []lang.Source{{Name: name, Bytes: src}}, Options{LookupEnv: noEnv, NoScope: true})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		if _, err := plan.Encode(cfg.Plan); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		runtime.ReadMemStats(&after)
		return d, after.TotalAlloc - before.TotalAlloc
	}
	// The same growth for hclsyntax parsing alone, the floor under any
	// compiler of these bytes.
	parse := func(src []byte) time.Duration {
		runtime.GC()
		t0 := time.Now()
		if _, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos); diags.HasErrors() {
			b.Fatal(diags)
		}
		return time.Since(t0)
	}
	var times, allocs, parses []float64
	for i := 0; i < b.N; i++ {
		ts, as := compile(small)
		tl, al := compile(large)
		times = append(times, float64(tl)/float64(ts))
		allocs = append(allocs, float64(al)/float64(as))
		parses = append(parses, float64(parse(large))/float64(parse(small)))
	}
	b.ReportMetric(median(times), "x-time")
	b.ReportMetric(median(allocs), "x-alloc")
	b.ReportMetric(median(parses), "x-parse-time")
}
