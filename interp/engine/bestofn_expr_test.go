package engine

import (
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/plan"
)

// bonExprs must give what interp.EvalDeferred gives, for values and errors,
// from any number of goroutines.
func TestBestOfNExprsMatchEvalDeferred(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"BONUS": "0.25"}[k], k == "BONUS" }
	exprs := []plan.Expr{
		{Source: "0.2 + 0.15 * candidate.index", Range: plan.Range{Filename: "main.hcl", Line: 3, Column: 5}},
		{Source: `lower(trimspace(candidate.content))`},
		{Source: `tonumber(env("BONUS")) + candidate.index`},
		{Source: `candidate.nope`},
		{Source: `1 +`},
	}
	vars := map[string]cty.Value{"candidate": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(2), "content": cty.StringVal("  Forty-Two ")})}
	x := newBonExprs(env)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range exprs {
				got, gd := x.eval(e, vars)
				want, wd := interp.EvalDeferred(e, vars, env)
				if gd.HasErrors() != wd.HasErrors() || gd.Error() != wd.Error() {
					t.Errorf("%s: diagnostics %q, want %q", e.Source, gd.Error(), wd.Error())
					continue
				}
				if !wd.HasErrors() && !got.RawEquals(want) {
					t.Errorf("%s = %#v, want %#v", e.Source, got, want)
				}
			}
		}()
	}
	wg.Wait()
}
