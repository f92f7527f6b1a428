package interp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/stdlib"
)

// buildScope makes the configuration's scope for the REPL: var.*, local.*,
// every block as an object with the plan's field names (agent.x.loop.mode),
// and the functions. file() reads against the configuration directory.
func (c *compiler) buildScope() *hcl.EvalContext {
	vars := map[string]cty.Value{}
	if c.scope != nil {
		for k, v := range c.scope.Variables {
			vars[k] = v
		}
	}
	groups := map[string]map[string]cty.Value{}
	add := func(addr string, entity any) {
		kind, name, ok := strings.Cut(addr, ".")
		if !ok {
			return
		}
		v, err := toCty(entity)
		if err != nil {
			// A plan value that does not convert is a bug, not the user's:
			// say so rather than leave the block silently out of scope.
			var subject *hcl.Range
			if b := c.block(addr); b != nil {
				subject = b.DefRange.Ptr()
			}
			c.warnf(subject, "Block not in scope", "%s cannot be shown as a value (%s); please report this.", addr, err)
			return
		}
		if groups[kind] == nil {
			groups[kind] = map[string]cty.Value{}
		}
		groups[kind][name] = v
	}
	p := c.p
	for i := range p.Models {
		add(p.Models[i].Address, p.Models[i])
	}
	for i := range p.Routers {
		add(p.Routers[i].Address, p.Routers[i])
	}
	for i := range p.Tools {
		add(p.Tools[i].Address, p.Tools[i])
	}
	for i := range p.MCPServers {
		add(p.MCPServers[i].Address, p.MCPServers[i])
	}
	for i := range p.ToolProfiles {
		add(p.ToolProfiles[i].Address, p.ToolProfiles[i])
	}
	for i := range p.Policies {
		add(p.Policies[i].Address, p.Policies[i])
	}
	for i := range p.PolicyTests {
		add(p.PolicyTests[i].Address, p.PolicyTests[i])
	}
	for i := range p.Budgets {
		add(p.Budgets[i].Address, p.Budgets[i])
	}
	for i := range p.Recoveries {
		add(p.Recoveries[i].Address, p.Recoveries[i])
	}
	for i := range p.Knowledge {
		add(p.Knowledge[i].Address, p.Knowledge[i])
	}
	for i := range p.Agents {
		add(p.Agents[i].Address, p.Agents[i])
	}
	for i := range p.BestOfN {
		add(p.BestOfN[i].Address, p.BestOfN[i])
	}
	for kind, m := range groups {
		vars[kind] = cty.ObjectVal(m)
	}
	return &hcl.EvalContext{
		Variables: vars,
		Functions: stdlib.Functions(stdlib.Options{BaseDir: c.baseDir, LookupEnv: c.opts.LookupEnv}),
	}
}

// toCty converts a plan value through its JSON form, so the REPL sees the
// same field names as the plan.
func toCty(v any) (cty.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return cty.NilVal, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return cty.NilVal, err
	}
	return jsonToCty(x)
}

// jsonToCty converts a decoded JSON value as ctyjson.ImpliedType would:
// objects become objects and arrays tuples. It is several times faster than
// ctyjson's token-by-token decoding, which matters for large configurations.
func jsonToCty(x any) (cty.Value, error) {
	switch v := x.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case bool:
		return cty.BoolVal(v), nil
	case string:
		return cty.StringVal(v), nil
	case json.Number:
		return cty.ParseNumberVal(v.String())
	case []any:
		if len(v) == 0 {
			return cty.EmptyTupleVal, nil
		}
		elems := make([]cty.Value, len(v))
		for i, e := range v {
			ev, err := jsonToCty(e)
			if err != nil {
				return cty.NilVal, err
			}
			elems[i] = ev
		}
		return cty.TupleVal(elems), nil
	case map[string]any:
		if len(v) == 0 {
			return cty.EmptyObjectVal, nil
		}
		attrs := make(map[string]cty.Value, len(v))
		for k, e := range v {
			ev, err := jsonToCty(e)
			if err != nil {
				return cty.NilVal, err
			}
			attrs[k] = ev
		}
		return cty.ObjectVal(attrs), nil
	}
	return cty.NilVal, fmt.Errorf("unexpected JSON value %T", x)
}
