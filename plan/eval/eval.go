package eval

import (
	"fmt"
	"os"
	"strings"
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
	if v, ok := x.exactString(*s.Deferred); ok {
		return v, nil
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

// exactEnv is the value of an env("NAME") call (with or without a default)
// whose name is a literal, read as the environment holds it: through cty it
// would come back in Unicode normal form C, and a value sent to a server (a
// key in a URL or a header) must be the bytes the user set. ok is false for
// any other expression, and for an unset variable (the function's own path
// then gives its default or its error).
func (x *Evaluator) exactEnv(e hclsyntax.Expression) (string, bool) {
	call, ok := e.(*hclsyntax.FunctionCallExpr)
	if !ok || call.Name != "env" || call.ExpandFinal || len(call.Args) < 1 || len(call.Args) > 2 || x.lookupEnv == nil {
		return "", false
	}
	for _, a := range call.Args {
		if !isStringLiteral(a) {
			return "", false
		}
	}
	name, diags := call.Args[0].Value(nil)
	if diags.HasErrors() || name.IsNull() || !name.IsKnown() || name.Type() != cty.String {
		return "", false
	}
	return x.lookupEnv(name.AsString())
}

// isStringLiteral reports whether e is a quoted string without
// interpolations.
func isStringLiteral(e hclsyntax.Expression) bool {
	switch e := e.(type) {
	case *hclsyntax.TemplateExpr:
		return e.IsStringLiteral()
	case *hclsyntax.LiteralValueExpr:
		return e.Val.Type() == cty.String
	}
	return false
}

// exactString is a deferred string that is an env() call, or a template of
// literal text and env() calls, with each variable's value exactly as the
// environment holds it (exactEnv); ok is false for anything else.
func (x *Evaluator) exactString(e plan.Expr) (string, bool) {
	expr, diags := x.parse(e)
	if diags.HasErrors() {
		return "", false
	}
	if w, ok := expr.(*hclsyntax.TemplateWrapExpr); ok {
		expr = w.Wrapped // "${env("KEY")}"
	}
	if v, ok := x.exactEnv(expr); ok {
		return v, true
	}
	tmpl, ok := expr.(*hclsyntax.TemplateExpr)
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, p := range tmpl.Parts {
		if lit, ok := p.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String && lit.Val.IsKnown() && !lit.Val.IsNull() {
			b.WriteString(lit.Val.AsString())
			continue
		}
		v, ok := x.exactEnv(p)
		if !ok {
			return "", false
		}
		b.WriteString(v)
	}
	return b.String(), true
}
