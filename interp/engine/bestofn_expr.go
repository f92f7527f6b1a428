package engine

import (
	"os"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/stdlib"
)

// bonExprs evaluates one best-of-N run's deferred expressions (vary, the
// scorer expr, the selector key) the way interp.EvalDeferred does, but
// parses each expression and builds the function table once per run rather
// than once per candidate: with eight candidates that is 24 evaluations,
// and parsing plus the table were most of the engine's own time in a run.
// Safe for concurrent use: parsed expressions and the table are read-only.
type bonExprs struct {
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

func newBonExprs(lookupEnv func(string) (string, bool)) *bonExprs {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return &bonExprs{lookupEnv: lookupEnv, parsed: map[plan.Expr]parsedExpr{}}
}

func (x *bonExprs) eval(e plan.Expr, vars map[string]cty.Value) (cty.Value, hcl.Diagnostics) {
	x.mu.Lock()
	p, ok := x.parsed[e]
	if !ok {
		name := e.Range.Filename
		if name == "" {
			name = "<deferred>"
		}
		start := hcl.Pos{Line: max(e.Range.Line, 1), Column: max(e.Range.Column, 1)}
		p.expr, p.diags = hclsyntax.ParseExpression([]byte(e.Source), name, start)
		x.parsed[e] = p
	}
	x.mu.Unlock()
	if p.diags.HasErrors() {
		return cty.DynamicVal, p.diags
	}
	x.once.Do(func() { x.funcs = stdlib.Functions(stdlib.Options{LookupEnv: x.lookupEnv}) })
	v, ds := p.expr.Value(&hcl.EvalContext{Variables: vars, Functions: x.funcs})
	return v, append(p.diags, ds...)
}
