package eval

import (
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/plan"
)

func TestDeferredAndString(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "TOKEN" {
			return "t0k", true
		}
		return "", false
	}
	s := plan.String{Deferred: &plan.Expr{Source: `"Bearer ${env("TOKEN")}"`, Range: plan.Range{Filename: "main.hcl", Line: 3, Column: 5}}}
	got, err := String(s, env)
	if err != nil || got != "Bearer t0k" {
		t.Fatalf("String = %q, %v", got, err)
	}
	if got, _ := String(plan.Lit("plain"), env); got != "plain" {
		t.Fatalf("literal = %q", got)
	}
	if _, err := String(plan.String{Deferred: &plan.Expr{Source: `env("UNSET")`}}, env); err == nil {
		t.Fatal("unset env without default should fail")
	}
	if _, err := String(plan.String{Deferred: &plan.Expr{Source: `["a"]`}}, env); err == nil {
		t.Fatal("a list is not a string")
	}
	v, d := Deferred(plan.Expr{Source: "0.2 + 0.15 * candidate.index"},
		map[string]cty.Value{"candidate": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(2)})}, env)
	if d.HasErrors() || !v.Equals(cty.NumberFloatVal(0.5)).True() {
		t.Fatalf("vary = %#v %s", v, d)
	}
	_, d = Deferred(plan.Expr{Source: "1 +", Range: plan.Range{Filename: "main.hcl", Line: 7, Column: 9}}, nil, env)
	if !d.HasErrors() {
		t.Fatal("bad source should fail")
	}
	// Positions are the configuration file's, not the expression's own.
	if r := d[0].Subject; r == nil || r.Filename != "main.hcl" || r.Start.Line != 7 {
		t.Fatalf("diagnostic at %v, want main.hcl:7", d[0].Subject)
	}
}

// One Evaluator shared by goroutines, each expression evaluated many times
// with changing variables, gives what a fresh evaluation gives, values and
// errors alike: the cache holds parses, never results.
func TestEvaluatorMatchesOneEvaluation(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"BONUS": "0.25"}[k], k == "BONUS" }
	exprs := []plan.Expr{
		{Source: "0.2 + 0.15 * candidate.index", Range: plan.Range{Filename: "main.hcl", Line: 3, Column: 5}},
		{Source: `lower(trimspace(candidate.content))`},
		{Source: `tonumber(env("BONUS")) + candidate.index`},
		{Source: `candidate.nope`},
		{Source: `1 +`},
	}
	candidate := func(i int) map[string]cty.Value {
		return map[string]cty.Value{"candidate": cty.ObjectVal(map[string]cty.Value{
			"index":   cty.NumberIntVal(int64(i)),
			"content": cty.StringVal("  Forty-Two "),
		})}
	}
	x := New(env)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 {
				vars := candidate(g + i)
				for _, e := range exprs {
					got, gd := x.Deferred(e, vars)
					want, wd := Deferred(e, vars, env)
					if gd.HasErrors() != wd.HasErrors() || gd.Error() != wd.Error() {
						t.Errorf("%s: diagnostics %q, want %q", e.Source, gd.Error(), wd.Error())
						continue
					}
					if !wd.HasErrors() && !got.RawEquals(want) {
						t.Errorf("%s = %#v, want %#v", e.Source, got, want)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(x.parsed) != len(exprs) {
		t.Errorf("%d parses kept for %d expressions", len(x.parsed), len(exprs))
	}
	// The second parse of an expression is the first one.
	a, _ := x.parse(exprs[0])
	b, _ := x.parse(exprs[0])
	if a != b {
		t.Error("an expression was parsed twice")
	}
}

// A nil lookup reads the process environment, as the engine's default
// does.
func TestNilLookupReadsTheEnvironment(t *testing.T) {
	t.Setenv("SYMBI_EVAL_TEST", "from the process")
	got, err := String(plan.String{Deferred: &plan.Expr{Source: `env("SYMBI_EVAL_TEST")`}}, nil)
	if err != nil || got != "from the process" {
		t.Fatalf("String = %q, %v", got, err)
	}
}
