package eval

import (
	"fmt"
	"os"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/stdlib"
)

// Evaluator evaluates a plan's deferred expressions with one environment
// lookup. It parses each expression once and builds the function table
// once, on first use: a best-of-N run evaluates its vary, scorer and key
// expressions per candidate (24 evaluations with eight candidates), and
// parsing plus the table were most of the engine's own time in such a run.
// The package functions Deferred, String and URL are one evaluation of a
// fresh Evaluator, so both forms are one implementation.
//
// Safe for concurrent use: parsed expressions and the table are read-only
// once made.
type Evaluator struct {
	lookupEnv func(string) (string, bool)

	once  sync.Once
	funcs map[string]function.Function

	mu     sync.Mutex
	parsed map[plan.Expr]parsedExpr
}

type parsedExpr struct {
	expr  hclsyntax.Expression
	diags hcl.Diagnostics
}

// New returns an Evaluator whose env() reads through lookupEnv
// (os.LookupEnv when nil).
func New(lookupEnv func(string) (string, bool)) *Evaluator {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return &Evaluator{lookupEnv: lookupEnv}
}

// Deferred evaluates a deferred expression with the given run-time
// variables (for example "candidate") and the functions; env() reads
// through lookupEnv (os.LookupEnv when nil).
func Deferred(e plan.Expr, vars map[string]cty.Value, lookupEnv func(string) (string, bool)) (cty.Value, hcl.Diagnostics) {
	return New(lookupEnv).Deferred(e, vars)
}

// String returns a plan.String's value: the literal, or its deferred
// expression evaluated now.
func String(s plan.String, lookupEnv func(string) (string, bool)) (string, error) {
	return New(lookupEnv).String(s)
}

// Deferred is the package's Deferred, with this evaluator's parses and
// function table.
func (x *Evaluator) Deferred(e plan.Expr, vars map[string]cty.Value) (cty.Value, hcl.Diagnostics) {
	expr, diags := x.parse(e)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	v, ds := expr.Value(&hcl.EvalContext{Variables: vars, Functions: x.functions()})
	if len(ds) == 0 {
		return v, diags
	}
	// The parse's diagnostics are shared by every evaluation: append to a
	// copy.
	return v, append(diags[:len(diags):len(diags)], ds...)
}

// String is the package's String, with this evaluator's parses and
// function table.
func (x *Evaluator) String(s plan.String) (string, error) {
	if s.Deferred == nil {
		return s.Value, nil
	}
	v, diags := x.Deferred(*s.Deferred, nil)
	if diags.HasErrors() {
		return "", fmt.Errorf("%s: %w", s.Deferred.Range, diags)
	}
	v, err := convert.Convert(v, cty.String)
	if err != nil || v.IsNull() || !v.IsKnown() {
		return "", fmt.Errorf("%s: the expression must give a string", s.Deferred.Range)
	}
	return v.AsString(), nil
}

// functions is the run-time function table: the stdlib's, with env()
// reading through the evaluator's lookup and file() against no directory.
func (x *Evaluator) functions() map[string]function.Function {
	x.once.Do(func() { x.funcs = stdlib.Functions(stdlib.Options{LookupEnv: x.lookupEnv}) })
	return x.funcs
}

// parse parses a deferred expression's source once per evaluator.
func (x *Evaluator) parse(e plan.Expr) (hclsyntax.Expression, hcl.Diagnostics) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p, ok := x.parsed[e]; ok {
		return p.expr, p.diags
	}
	expr, diags := parse(e)
	if x.parsed == nil {
		x.parsed = map[plan.Expr]parsedExpr{}
	}
	x.parsed[e] = parsedExpr{expr, diags}
	return expr, diags
}

// parse parses a deferred expression's source, its positions those of the
// configuration file it came from.
func parse(e plan.Expr) (hclsyntax.Expression, hcl.Diagnostics) {
	name := e.Range.Filename
	if name == "" {
		name = "<deferred>"
	}
	start := hcl.Pos{Line: max(e.Range.Line, 1), Column: max(e.Range.Column, 1)}
	return hclsyntax.ParseExpression([]byte(e.Source), name, start)
}
