package opa

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/symbi-dev/symbi/policy"
)

// RegoTests runs the test_ rules of o's modules with o's data, as `opa test`
// does, for `symbi policy test` (policy.RunTests).
func (o *OPA) RegoTests(ctx context.Context) []policy.TestResult {
	return runRegoTests(ctx, o.address, o)
}

func runRegoTests(ctx context.Context, address string, o *OPA) []policy.TestResult {
	modules := map[string]*ast.Module{}
	for path, src := range o.sources {
		m, err := ast.ParseModuleWithOpts(path, src, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return []policy.TestResult{{Name: address, Kind: "rego", Errored: true, Message: err.Error()}}
		}
		modules[path] = m
	}
	store := inmem.NewFromObjectWithOpts(o.data, inmem.OptRoundTripOnWrite(false))
	ch, err := tester.NewRunner().
		SetDefaultRegoVersion(ast.RegoV1).
		SetModules(modules).
		SetStore(store).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true). // as the gate evaluates them
		RunTests(ctx, nil)
	if err != nil {
		return []policy.TestResult{{Name: address, Kind: "rego", Errored: true, Message: err.Error()}}
	}
	var out []policy.TestResult
	for res := range ch {
		r := policy.TestResult{
			Name:    fmt.Sprintf("%s %s.%s", address, res.Package, res.Name),
			Kind:    "rego",
			Elapsed: res.Duration,
			Skipped: res.Skip,
		}
		if res.Location != nil {
			r.Location = fmt.Sprintf("%s:%d", res.Location.File, res.Location.Row)
		}
		switch {
		case res.Skip:
		case res.Error != nil:
			r.Errored, r.Message = true, res.Error.Error()
		case res.Fail:
			r.Message = "test rule is false or undefined"
			if res.FailedAt != nil {
				r.Message += fmt.Sprintf(" (failed at %s: %s)", res.FailedAt.Location, res.FailedAt)
			}
			if len(res.Output) > 0 {
				r.Message += "\n" + strings.TrimRight(string(res.Output), "\n")
			}
		default:
			r.Passed = true
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b policy.TestResult) int { return cmp.Compare(a.Location, b.Location) })
	return out
}
