package interp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/lang"
)

// refKinds are the block types a reference may name, with the words used
// for them in diagnostics.
var refKinds = map[string]string{
	"model":        "model",
	"router":       "router",
	"tool":         "tool",
	"mcp_server":   "mcp_server",
	"tool_profile": "tool_profile",
	"policy":       "policy",
	"policy_test":  "policy_test",
	"budget":       "budget",
	"recovery":     "recovery",
	"knowledge":    "knowledge",
	"agent":        "agent",
	"best_of_n":    "best_of_n",
}

// collectSymbols indexes every named block by kind and name, reporting
// duplicates with the earlier declaration's position.
func (c *compiler) collectSymbols() {
	c.symbols = make(map[string]map[string]*lang.Block, len(refKinds))
	for k := range refKinds {
		c.symbols[k] = map[string]*lang.Block{}
	}
	kept := c.mod.Blocks[:0:0]
	for _, b := range c.mod.Blocks {
		tab := c.symbols[b.Type]
		if prev, dup := tab[b.Name]; dup {
			c.errorf(b.DefRange.Ptr(), fmt.Sprintf("Duplicate %s %q", b.Type, b.Name),
				"A %s named %q was already declared at %s. Names must be unique within a block type.", b.Type, b.Name, prev.DefRange)
			continue
		}
		tab[b.Name] = b
		kept = append(kept, b)
	}
	c.mod.Blocks = kept
}

// ref resolves the reference in attribute name of b to an address, checking
// that it names a declared block of one of the given kinds. It returns "" when
// the attribute is absent or wrong.
func (c *compiler) ref(b *lang.Block, name string, kinds ...string) string {
	if b == nil || b.Attrs[name] == nil {
		return ""
	}
	return c.resolve(b.Attrs[name].Expr, name, kinds)
}

// refs resolves a list of references.
func (c *compiler) refs(b *lang.Block, name string, kinds ...string) []string {
	if b == nil || b.Attrs[name] == nil {
		return nil
	}
	expr := b.Attrs[name].Expr
	elems, diags := hcl.ExprList(expr)
	if diags.HasErrors() {
		c.errorf(expr.Range().Ptr(), "Invalid reference list", "%s must be a list of references such as [%s.example].", name, kinds[0])
		return nil
	}
	out := make([]string, 0, len(elems))
	seen := make(map[string]bool, len(elems))
	for _, e := range elems {
		addr := c.resolve(e, name, kinds)
		if addr == "" {
			continue
		}
		if seen[addr] {
			c.errorf(e.Range().Ptr(), "Duplicate reference", "%s appears more than once in %s.", addr, name)
			continue
		}
		seen[addr] = true
		out = append(out, addr)
	}
	return out
}

func (c *compiler) resolve(expr hcl.Expression, name string, kinds []string) string {
	rng := expr.Range()
	want := strings.Join(kinds, " or ")
	tr, diags := hcl.AbsTraversalForExpr(expr)
	if diags.HasErrors() || len(tr) != 2 {
		hint := ""
		if v, d := expr.Value(nil); !d.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			hint = fmt.Sprintf(" Write %s.%s without quotes.", kinds[0], v.AsString())
		}
		c.errorf(rng.Ptr(), "Invalid reference", "%s must be a reference to a %s, written TYPE.NAME (for example %s.example).%s", name, want, kinds[0], hint)
		return ""
	}
	kind := tr.RootName()
	step, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		c.errorf(rng.Ptr(), "Invalid reference", "%s must be a reference written TYPE.NAME.", name)
		return ""
	}
	if _, isKind := refKinds[kind]; !isKind {
		c.errorf(rng.Ptr(), "Invalid reference", "%q is not a block type, so %s cannot refer to it.%s", kind, name, suggest(kind, kinds))
		return ""
	}
	if !checkEnum(kind, kinds) {
		c.errorf(rng.Ptr(), "Wrong kind of reference", "%s must refer to a %s, not a %s (%s.%s).", name, want, kind, kind, step.Name)
		return ""
	}
	if _, ok := c.symbols[kind][step.Name]; !ok {
		c.errorf(rng.Ptr(), fmt.Sprintf("Reference to undeclared %s", kind), "There is no %s named %q.%s", kind, step.Name, suggestAddr(kind, step.Name, c.symbols[kind]))
		return ""
	}
	return kind + "." + step.Name
}

func suggestAddr(kind, name string, tab map[string]*lang.Block) string {
	best, bestD := "", 3
	for n := range tab {
		if d := levenshtein.Distance(name, n, nil); d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %s.%s?", kind, best)
}

// suggest returns " Did you mean "x"?" for the closest candidate, or "".
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, n := range candidates {
		if d := levenshtein.Distance(s, n, nil); d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
