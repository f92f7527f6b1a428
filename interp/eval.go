package interp

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/stdlib"
)

// functions builds the compile-time function table. env() is in it so that
// expressions type-check, but compile never calls it: every expression that
// calls env() is deferred to run time.
func (c *compiler) functions() map[string]function.Function {
	return stdlib.Functions(stdlib.Options{
		BaseDir:   c.baseDir,
		LookupEnv: func(string) (string, bool) { return "", false },
		OnRead: func(path string, content []byte) {
			rel := c.relPath(path)
			c.reads[rel] = plan.NewFileRef(rel, content)
		},
	})
}

// callsEnv reports whether an expression calls env() anywhere inside it.
func callsEnv(expr hcl.Expression) bool {
	// The kinds configurations are made of are walked directly: the
	// generic walk allocates per node, and every attribute of every block
	// is checked.
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr, *hclsyntax.ScopeTraversalExpr:
		return false
	case *hclsyntax.TemplateExpr:
		return anyCallsEnv(e.Parts)
	case *hclsyntax.TemplateWrapExpr:
		return callsEnv(e.Wrapped)
	case *hclsyntax.TupleConsExpr:
		return anyCallsEnv(e.Exprs)
	case *hclsyntax.ObjectConsExpr:
		for _, it := range e.Items {
			if callsEnv(it.KeyExpr) || callsEnv(it.ValueExpr) {
				return true
			}
		}
		return false
	case *hclsyntax.ObjectConsKeyExpr:
		return callsEnv(e.Wrapped)
	case *hclsyntax.FunctionCallExpr:
		return e.Name == "env" || anyCallsEnv(e.Args)
	case hclsyntax.Expression:
		found := false
		hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
			if fc, ok := n.(*hclsyntax.FunctionCallExpr); ok && fc.Name == "env" {
				found = true
			}
			return nil
		})
		return found
	}
	return false
}

func anyCallsEnv(exprs []hclsyntax.Expression) bool {
	for _, x := range exprs {
		if callsEnv(x) {
			return true
		}
	}
	return false
}

// source returns an expression's text as written.
func (c *compiler) source(r hcl.Range) string {
	f := c.mod.Files[r.Filename]
	if f == nil || r.End.Byte > len(f.Bytes) || r.Start.Byte > r.End.Byte {
		return ""
	}
	return string(f.Bytes[r.Start.Byte:r.End.Byte])
}

// eval evaluates an expression that must be known at compile time. It
// returns ok=false after reporting a diagnostic, and a value that may be
// unknown (validate) or null (unset).
func (c *compiler) eval(expr hcl.Expression) (cty.Value, bool) {
	if callsEnv(expr) {
		c.errorf(expr.Range().Ptr(), "env() not allowed here",
			"This value is needed at compile time, but env() is evaluated only at run time so that no secret enters a plan. env() may be used in model base_url, tool command argv/env, tool http url/headers, and mcp_server command/url/env.")
		return cty.NilVal, false
	}
	return c.evalWithoutEnv(expr)
}

// evalWithoutEnv is eval for an expression known not to call env().
func (c *compiler) evalWithoutEnv(expr hcl.Expression) (cty.Value, bool) {
	if !c.checkRefs(expr) {
		return cty.NilVal, false
	}
	v, diags := expr.Value(c.scope)
	c.diags = append(c.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	return c.planValue(expr.Range(), v)
}

// sensitive marks the value of a variable declared sensitive, and every value
// computed from it, as Terraform's marks.Sensitive does.
type sensitive struct{ variable string }

// planValue is the one gate between evaluation and the plan: every value the
// compiler stores in a plan field passes through eval, and so through here.
// A value that carries a sensitive mark anywhere inside it is refused, since
// the plan is printed by symbi plan, saved with every run and copied into
// journals. It returns the value unmarked, ok=false after reporting.
func (c *compiler) planValue(rng hcl.Range, v cty.Value) (cty.Value, bool) {
	if !v.ContainsMarked() {
		return v, true
	}
	_, marks := v.UnmarkDeep()
	var names []string
	for m := range marks {
		if s, ok := m.(sensitive); ok {
			names = append(names, "var."+s.variable)
		}
	}
	sort.Strings(names)
	var who string
	switch len(names) {
	case 0: // no other marks exist; kept safe should one be added
		who = "it is"
	case 1:
		who = names[0] + " is"
	default:
		who = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are"
	}
	c.errorf(rng.Ptr(), "Sensitive value in the plan",
		"sensitive value cannot be stored in the plan: %s sensitive; read secrets at run time with env(\"NAME\") instead.", who)
	return cty.NilVal, false
}

// checkRefs reports references that a value expression may not make: block
// references (those belong in reference attributes) and undeclared var or
// local names, with suggestions.
func (c *compiler) checkRefs(expr hcl.Expression) bool {
	ok := true
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		rng := tr.SourceRange()
		switch root {
		case "var", "local":
			name, has := attrStep(tr)
			if !has {
				c.errorf(rng.Ptr(), "Invalid reference", "A %s reference is written %s.NAME.", root, root)
				ok = false
				continue
			}
			var known bool
			var names func() []string
			if root == "var" {
				_, known = c.varDecl[name]
				names = func() []string { return keys(c.varDecl) }
			} else {
				_, known = c.locals[name]
				names = func() []string { return keys(c.locals) }
			}
			if !known {
				what := "input variable"
				if root == "local" {
					what = "local value"
				}
				c.errorf(rng.Ptr(), "Reference to undeclared "+what, "There is no %s named %q.%s", what, name, suggest(name, names()))
				ok = false
			}
		default:
			if _, isKind := refKinds[root]; isKind {
				c.errorf(rng.Ptr(), "Block reference not allowed here",
					"%s refers to a block, but this argument takes a value. Block references are written only in arguments that take them, such as model = model.fast.", c.source(rng))
			} else {
				c.errorf(rng.Ptr(), "Unknown variable", "There is no variable named %q; values come from var.NAME and local.NAME.%s", root, suggest(root, []string{"var", "local"}))
			}
			ok = false
		}
	}
	return ok
}

func attrStep(tr hcl.Traversal) (string, bool) {
	if len(tr) < 2 {
		return "", false
	}
	if a, ok := tr[1].(hcl.TraverseAttr); ok {
		return a.Name, true
	}
	return "", false
}

// value evaluates the named attribute of b, converted to ty. ok is false when
// the attribute is absent, null, unknown, or wrong (reported).
func (c *compiler) value(b *lang.Block, name string, ty cty.Type) (cty.Value, *hcl.Attribute, bool) {
	if b == nil {
		return cty.NilVal, nil, false
	}
	a := b.Attrs[name]
	if a == nil {
		return cty.NilVal, nil, false
	}
	v, ok := c.eval(a.Expr)
	if ok && !v.IsWhollyKnown() {
		c.unknown[b] = true
	}
	if !ok || v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, a, false
	}
	if ty != cty.DynamicPseudoType {
		cv, err := convert.Convert(v, ty)
		if err != nil {
			c.errorf(a.Expr.Range().Ptr(), "Incorrect attribute value type", "%s must be %s: %s.", name, ty.FriendlyName(), err)
			return cty.NilVal, a, false
		}
		v = cv
	}
	return v, a, true
}

func (c *compiler) require(b *lang.Block, names ...string) {
	for _, n := range names {
		if b.Attrs[n] == nil {
			c.errorf(b.DefRange.Ptr(), "Missing required argument", "The argument %q is required in a %s block.", n, b.Type)
		}
	}
}

func (c *compiler) str(b *lang.Block, name, def string) string {
	v, _, ok := c.value(b, name, cty.String)
	if !ok {
		return def
	}
	return v.AsString()
}

func (c *compiler) boolean(b *lang.Block, name string, def bool) bool {
	v, _, ok := c.value(b, name, cty.Bool)
	if !ok {
		return def
	}
	return v.True()
}

// maxWhole bounds whole numbers so that sums and products of limits in the
// engine's saturating arithmetic start far from overflow.
const maxWhole = 1 << 53

// integer reads a whole number that must not be negative.
func (c *compiler) integer(b *lang.Block, name string, def int64) int64 {
	v, a, ok := c.value(b, name, cty.Number)
	if !ok {
		return def
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be a whole number.", name)
		return def
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i < 0 || i > maxWhole {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be a whole number between 0 and %d.", name, int64(maxWhole))
		return def
	}
	return i
}

func (c *compiler) intv(b *lang.Block, name string, def int) int {
	return int(c.integer(b, name, int64(def)))
}

// number reads a finite, non-negative number.
func (c *compiler) number(b *lang.Block, name string, def float64) float64 {
	v, a, ok := c.value(b, name, cty.Number)
	if !ok {
		return def
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) || math.IsNaN(f) || f < 0 {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value", "%s must be a finite number that is not negative.", name)
		return def
	}
	return f
}

// fraction reads a number between 0 and 1.
func (c *compiler) fraction(b *lang.Block, name string, def float64) float64 {
	f := c.number(b, name, def)
	if f > 1 {
		c.errorf(b.Attrs[name].Expr.Range().Ptr(), "Invalid value", "%s must be between 0 and 1, not %g.", name, f)
		return def
	}
	return f
}

func (c *compiler) strings(b *lang.Block, name string) []string {
	v, _, ok := c.value(b, name, cty.List(cty.String))
	if !ok {
		return nil
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out
}

func (c *compiler) stringMap(b *lang.Block, name string) map[string]string {
	v, _, ok := c.value(b, name, cty.Map(cty.String))
	if !ok {
		return nil
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		out[k.AsString()] = e.AsString()
	}
	return out
}

func (c *compiler) duration(b *lang.Block, name string, def plan.Duration) plan.Duration {
	v, a, ok := c.value(b, name, cty.String)
	if !ok {
		return def
	}
	d, err := stdlib.ParseDuration(v.AsString())
	if err != nil {
		c.errorf(a.Expr.Range().Ptr(), "Invalid duration", "%s: %s.", name, err)
		return def
	}
	return plan.Duration(d)
}

func (c *compiler) enum(b *lang.Block, name, def string, allowed ...string) string {
	v, a, ok := c.value(b, name, cty.String)
	if !ok {
		return def
	}
	s := v.AsString()
	if !checkEnum(s, allowed) {
		c.errorf(a.Expr.Range().Ptr(), "Invalid value for "+name, "%q is not one of %s.%s", s, strings.Join(quoteAll(allowed), ", "), suggest(s, allowed))
		return def
	}
	return s
}

func checkEnum(s string, allowed []string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// pstring reads a plan.String: a literal, or the source of an expression that
// calls env(), kept for run time.
func (c *compiler) pstring(b *lang.Block, name string) plan.String {
	if b == nil || b.Attrs[name] == nil {
		return plan.String{}
	}
	return c.pstringExpr(b.Attrs[name].Expr, name)
}

func (c *compiler) pstringExpr(expr hcl.Expression, name string) plan.String {
	if callsEnv(expr) {
		return plan.String{Deferred: c.deferredEnv(expr)}
	}
	v, ok := c.evalWithoutEnv(expr)
	if !ok || v.IsNull() || !v.IsWhollyKnown() {
		return plan.String{}
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		c.errorf(expr.Range().Ptr(), "Incorrect attribute value type", "%s must be a string: %s.", name, err)
		return plan.String{}
	}
	return plan.Lit(s.AsString())
}

// deferredEnv keeps an env() expression as source. At run time only the
// functions are in scope, so it may not refer to var or local.
func (c *compiler) deferredEnv(expr hcl.Expression) *plan.Expr {
	for _, tr := range expr.Variables() {
		c.errorf(tr.SourceRange().Ptr(), "Reference in a run-time expression",
			"An expression that calls env() is evaluated at run time, where %s is not available. Use literals and functions only, for example \"Bearer ${env(\"TOKEN\")}\".", c.source(tr.SourceRange()))
	}
	c.checkFuncs(expr)
	return &plan.Expr{Source: c.source(expr.Range()), Range: c.prange(expr.Range())}
}

// checkFuncs reports calls to functions that do not exist, for expressions
// that are not evaluated now.
func (c *compiler) checkFuncs(expr hcl.Expression) {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return
	}
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		if fc, ok := n.(*hclsyntax.FunctionCallExpr); ok {
			if _, exists := c.funcs[fc.Name]; !exists {
				c.errorf(fc.NameRange.Ptr(), "Call to unknown function", "There is no function named %q.%s", fc.Name, suggest(fc.Name, keys(c.funcs)))
			}
		}
		return nil
	})
}

// pstrings reads a list of plan.String, deferring each element that calls env().
func (c *compiler) pstrings(b *lang.Block, name string) []plan.String {
	if b == nil || b.Attrs[name] == nil {
		return nil
	}
	expr := b.Attrs[name].Expr
	elems, diags := hcl.ExprList(expr)
	if diags.HasErrors() {
		if callsEnv(expr) {
			c.errorf(expr.Range().Ptr(), "Invalid list", "%s must be written as a list [ ... ] when it calls env(), so each element can be kept for run time.", name)
			return nil
		}
		v, _, ok := c.value(b, name, cty.List(cty.String))
		if !ok {
			return nil
		}
		var out []plan.String
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, plan.Lit(e.AsString()))
		}
		return out
	}
	out := make([]plan.String, 0, len(elems))
	for _, e := range elems {
		out = append(out, c.pstringExpr(e, name))
	}
	return out
}

// pstringMap reads a map of plan.String, deferring each value that calls env().
func (c *compiler) pstringMap(b *lang.Block, name string) map[string]plan.String {
	if b == nil || b.Attrs[name] == nil {
		return nil
	}
	expr := b.Attrs[name].Expr
	pairs, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		if callsEnv(expr) {
			c.errorf(expr.Range().Ptr(), "Invalid map", "%s must be written as an object { ... } when it calls env(), so each value can be kept for run time.", name)
			return nil
		}
		m := c.stringMap(b, name)
		if m == nil {
			return nil
		}
		out := make(map[string]plan.String, len(m))
		for k, v := range m {
			out[k] = plan.Lit(v)
		}
		return out
	}
	out := make(map[string]plan.String, len(pairs))
	for _, kv := range pairs {
		k, ok := c.eval(kv.Key)
		if !ok || !k.IsWhollyKnown() || k.IsNull() {
			continue
		}
		ks, err := convert.Convert(k, cty.String)
		if err != nil {
			c.errorf(kv.Key.Range().Ptr(), "Invalid key", "%s keys must be strings.", name)
			continue
		}
		out[ks.AsString()] = c.pstringExpr(kv.Value, name)
	}
	return out
}

// deferred keeps an expression that the engine evaluates per candidate, after
// checking that it uses only the run-time variables its place allows.
func (c *compiler) deferred(expr hcl.Expression, where string, allowed ...string) *plan.Expr {
	for _, tr := range expr.Variables() {
		rng := tr.SourceRange()
		name, has := attrStep(tr)
		if tr.RootName() != "candidate" || !has || !checkEnum(name, allowed) {
			c.errorf(rng.Ptr(), "Invalid reference in a deferred expression",
				"%s is evaluated per candidate at run time and may use only %s, not %s.%s",
				where, strings.Join(prefixAll("candidate.", allowed), ", "), c.source(rng), suggest(name, allowed))
		}
	}
	c.checkFuncs(expr)
	return &plan.Expr{Source: c.source(expr.Range()), Range: c.prange(expr.Range())}
}

func prefixAll(p string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = p + s
	}
	return out
}
