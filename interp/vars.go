package interp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
)

type variable struct {
	block *lang.Block
	ty    cty.Type
	value cty.Value
	set   bool // a value came from somewhere
}

// evalVariables gives every declared variable its value: --var is strongest,
// then --var-file, then SYMBI_VAR_<name>, then the default.
func (c *compiler) evalVariables() {
	c.varDecl = map[string]*lang.Block{}
	vars := map[string]*variable{}
	var order []string
	for _, b := range c.mod.Variables {
		if prev, dup := c.varDecl[b.Name]; dup {
			c.errorf(b.DefRange.Ptr(), fmt.Sprintf("Duplicate variable %q", b.Name), "A variable named %q was already declared at %s.", b.Name, prev.DefRange)
			continue
		}
		c.varDecl[b.Name] = b
		v := &variable{block: b, ty: cty.DynamicPseudoType}
		if a := b.Attrs["type"]; a != nil {
			ty, diags := typeexpr.TypeConstraint(a.Expr)
			c.diags = append(c.diags, diags...)
			if !diags.HasErrors() {
				v.ty = ty
			}
		}
		if a := b.Attrs["default"]; a != nil {
			if callsEnv(a.Expr) || len(a.Expr.Variables()) > 0 {
				c.errorf(a.Expr.Range().Ptr(), "Invalid default value", "A variable's default must be a literal value: it cannot refer to other values or call env().")
			} else if dv, diags := a.Expr.Value(&hcl.EvalContext{Functions: c.funcs}); diags.HasErrors() {
				c.diags = append(c.diags, diags...)
			} else {
				v.value, v.set = c.convertVar(b.Name, dv, v.ty, a.Expr.Range().Ptr())
			}
			if !v.set {
				// Reported above; an unknown value keeps the error from cascading.
				v.value, v.set = cty.UnknownVal(v.ty), true
			}
		}
		vars[b.Name] = v
		order = append(order, b.Name)
	}
	for _, name := range order {
		if s, ok := c.opts.LookupEnv("SYMBI_VAR_" + name); ok {
			v := vars[name]
			v.value, v.set = c.parseVarString(name, s, v.ty, "environment variable SYMBI_VAR_"+name)
		}
	}
	for _, path := range c.opts.VarFiles {
		c.readVarFile(path, vars)
	}
	for _, name := range keys(c.opts.Values) {
		given := c.opts.Values[name]
		v, ok := vars[name]
		if !ok {
			c.errorf(given.Range.Ptr(), "Value for undeclared variable", "The configuration declares no variable %q.%s", name, suggest(name, order))
			continue
		}
		cv, ok := c.convertVar(name, given.Value, v.ty, given.Range.Ptr())
		if !ok {
			// Reported; an unknown value keeps it from being reported again
			// as a missing one.
			cv = cty.UnknownVal(v.ty)
		}
		v.value, v.set = cv, true
	}
	for _, name := range sortedKeys(c.opts.Vars) {
		v, ok := vars[name]
		if !ok {
			c.errorf(nil, "Value for undeclared variable", "--var sets %q, but the configuration declares no variable of that name.%s", name, suggest(name, order))
			continue
		}
		v.value, v.set = c.parseVarString(name, c.opts.Vars[name], v.ty, "--var "+name)
	}

	attrs := map[string]cty.Value{}
	for _, name := range order {
		v := vars[name]
		if !v.set {
			if c.opts.Validate {
				v.value = cty.UnknownVal(v.ty)
			} else {
				c.errorf(v.block.DefRange.Ptr(), "No value for required variable",
					"The variable %q has no default, so it needs a value: --var %s=..., --var-file, or the environment variable SYMBI_VAR_%s.", name, name, name)
				v.value = cty.UnknownVal(v.ty)
			}
		}
		pv := plan.Variable{
			Name:        name,
			Type:        typeexpr.TypeString(v.ty),
			Description: c.str(v.block, "description", ""),
			Sensitive:   c.boolean(v.block, "sensitive", false),
			Range:       c.prange(v.block.DefRange),
		}
		attrs[name] = v.value
		if pv.Sensitive {
			// The mark follows the value through locals, functions and
			// templates; planValue refuses any value that carries it.
			attrs[name] = v.value.Mark(sensitive{variable: name})
		}
		if v.ty == cty.DynamicPseudoType {
			pv.Type = "any"
		}
		if !pv.Sensitive && v.value.IsWhollyKnown() {
			if b, err := ctyjson.Marshal(v.value, v.value.Type()); err == nil {
				pv.Value = json.RawMessage(b)
			}
		}
		c.p.Variables = append(c.p.Variables, pv)
	}
	c.scope = &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(attrs)},
		Functions: c.funcs,
	}
}

func (c *compiler) convertVar(name string, v cty.Value, ty cty.Type, subject *hcl.Range) (cty.Value, bool) {
	cv, err := convert.Convert(v, ty)
	if err != nil {
		c.errorf(subject, "Invalid value for variable", "The value for %q is not %s: %s.", name, ty.FriendlyName(), err)
		return cty.NilVal, false
	}
	return cv, true
}

// parseVarString reads a value given as text: a string variable takes it as
// it is; any other type parses it as an HCL expression, as Terraform does.
func (c *compiler) parseVarString(name, s string, ty cty.Type, from string) (cty.Value, bool) {
	if ty == cty.String || ty == cty.DynamicPseudoType {
		return cty.StringVal(s), true
	}
	expr, diags := hclsyntax.ParseExpression([]byte(s), from, hcl.InitialPos)
	if diags.HasErrors() {
		c.errorf(nil, "Invalid value for variable", "%s: %q is not a valid %s value.", from, s, ty.FriendlyName())
		return cty.NilVal, false
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		c.errorf(nil, "Invalid value for variable", "%s: %q is not a valid %s value.", from, s, ty.FriendlyName())
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		c.errorf(nil, "Invalid value for variable", "%s: %s.", from, err)
		return cty.NilVal, false
	}
	return cv, true
}

func (c *compiler) readVarFile(path string, vars map[string]*variable) {
	src, err := os.ReadFile(path)
	if err != nil {
		c.errorf(nil, "Cannot read variable file", "%s.", err)
		return
	}
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.EqualFold(filepath.Ext(path), ".json") {
		f, diags = hcljson.Parse(src, path)
	} else {
		f, diags = hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	}
	c.diags = append(c.diags, diags...)
	if diags.HasErrors() || f == nil {
		return
	}
	c.mod.Files[path] = f
	attrs, diags := f.Body.JustAttributes()
	c.diags = append(c.diags, diags...)
	for _, a := range lang.SortedAttrs(attrs) {
		v, ok := vars[a.Name]
		if !ok {
			c.warnf(a.NameRange.Ptr(), "Value for undeclared variable", "The configuration declares no variable %q; this value is ignored.%s", a.Name, suggest(a.Name, keys(c.varDecl)))
			continue
		}
		val, diags := a.Expr.Value(&hcl.EvalContext{Functions: c.funcs})
		c.diags = append(c.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		if cv, ok := c.convertVar(a.Name, val, v.ty, a.Expr.Range().Ptr()); ok {
			v.value, v.set = cv, true
		}
	}
}

func sortedKeys(m map[string]string) []string { return keys(m) }

// evalLocals evaluates locals in dependency order. Each local is evaluated
// with only the locals it refers to in scope.
func (c *compiler) evalLocals() {
	c.locals = map[string]*hcl.Attribute{}
	for _, a := range c.mod.Locals {
		if prev, dup := c.locals[a.Name]; dup {
			c.errorf(a.NameRange.Ptr(), fmt.Sprintf("Duplicate local value %q", a.Name), "A local value named %q was already defined at %s.", a.Name, prev.NameRange)
			continue
		}
		c.locals[a.Name] = a
	}
	values := make(map[string]cty.Value, len(c.locals))
	state := make(map[string]int, len(c.locals)) // 0 new, 1 visiting, 2 done
	var stack []string
	var visit func(name string) bool
	visit = func(name string) bool {
		switch state[name] {
		case 2:
			return true
		case 1:
			i := len(stack) - 1
			for i > 0 && stack[i] != name {
				i--
			}
			cycle := append(append([]string{}, stack[i:]...), name)
			a := c.locals[name]
			c.errorf(a.NameRange.Ptr(), "Cycle in local values", "These local values refer to each other in a cycle: %s.", "local."+strings.Join(cycle, " → local."))
			return false
		}
		state[name] = 1
		stack = append(stack, name)
		a := c.locals[name]
		ok := true
		deps := map[string]cty.Value{}
		for _, tr := range a.Expr.Variables() {
			if tr.RootName() != "local" {
				continue
			}
			dep, has := attrStep(tr)
			if !has || c.locals[dep] == nil {
				continue // checkRefs reports it
			}
			if !visit(dep) {
				ok = false
				continue
			}
			deps[dep] = values[dep]
		}
		stack = stack[:len(stack)-1]
		state[name] = 2
		if !ok {
			values[name] = cty.DynamicVal
			return false
		}
		ctx := c.scope.NewChild()
		ctx.Variables = map[string]cty.Value{"local": cty.ObjectVal(deps)}
		v, evalOK := c.evalIn(ctx, a.Expr)
		if !evalOK {
			v = cty.DynamicVal
		}
		values[name] = v
		return evalOK
	}
	for _, a := range c.mod.Locals {
		if c.locals[a.Name] == a {
			visit(a.Name)
		}
	}
	c.scope.Variables["local"] = cty.ObjectVal(values)
}

func (c *compiler) evalIn(ctx *hcl.EvalContext, expr hcl.Expression) (cty.Value, bool) {
	if callsEnv(expr) {
		c.errorf(expr.Range().Ptr(), "env() not allowed here",
			"Local values are computed at compile time, but env() is evaluated only at run time so that no secret enters a plan. Call env() directly where it is allowed: model base_url, tool command argv/env, tool http url/headers, and mcp_server command/url/env.")
		return cty.NilVal, false
	}
	if !c.checkRefs(expr) {
		return cty.NilVal, false
	}
	v, diags := expr.Value(ctx)
	c.diags = append(c.diags, diags...)
	return v, !diags.HasErrors()
}
