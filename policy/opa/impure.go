package opa

import (
	"context"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Impure names the built-ins o's modules call whose result may differ
// between two evaluations of the same input: those OPA marks
// nondeterministic (time.now_ns, rand.intn, uuid.rfc4122, http.send,
// net.lookup_ip_addr, opa.runtime, io.jwt.decode_verify, …), sorted, each
// once. A runtime that replays a run's decisions (Temporal) cannot take
// such a policy: a replay could decide otherwise.
func (o *OPA) Impure(context.Context) ([]string, error) {
	seen := map[string]bool{}
	note := func(op ast.Ref) {
		name := op.String()
		if b, ok := ast.BuiltinMap[name]; ok && b.Nondeterministic {
			seen[name] = true
		}
	}
	for _, m := range o.modules {
		ast.WalkExprs(m, func(x *ast.Expr) bool {
			if x.IsCall() {
				note(x.Operator())
			}
			return false
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if c, ok := t.Value.(ast.Call); ok && len(c) > 0 {
				if r, ok := c[0].Value.(ast.Ref); ok {
					note(r)
				}
			}
			return false
		})
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}
