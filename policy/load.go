package policy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/symbi-dev/symbi/plan"
)

// FromPlan prepares the policy at addr ("policy.rules"): files are read
// relative to baseDir (through FileRef.Load, hash-checked), Rego is compiled
// and its query prepared, Cedar is parsed and validated. The compiler calls
// it to check a policy, the engine once per run. Errors are LoadErrors
// (errors.As) naming the file and line.
func FromPlan(ctx context.Context, p *plan.Plan, addr string, baseDir string) (Gate, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: %s (no plan)", ErrUnknownPolicy, addr)
	}
	pol := p.Policy(addr)
	if pol == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPolicy, addr)
	}
	switch {
	case pol.Kind == "rules" && pol.Rules != nil:
		r, err := NewRules(*pol.Rules)
		if err != nil {
			return nil, LoadErrors{{Policy: addr, File: pol.Range.Filename, Line: pol.Range.Line, Err: err}}
		}
		return r, nil
	case pol.Kind == "opa" && pol.OPA != nil:
		return NewOPA(ctx, addr, *pol.OPA, baseDir)
	case pol.Kind == "cedar" && pol.Cedar != nil:
		return NewCedar(addr, *pol.Cedar, p, baseDir)
	}
	return nil, LoadErrors{{Policy: addr, File: pol.Range.Filename, Line: pol.Range.Line, Err: fmt.Errorf("policy kind %q has no matching block (want rules, opa or cedar)", pol.Kind)}}
}

// ChainFromPlan builds the chain of the agent at agentAddr: its policies in
// order, its loop's on_no_policy, and approval = "always" for its tools that
// say so. validate is the tool-schema check for modified arguments.
func ChainFromPlan(ctx context.Context, p *plan.Plan, agentAddr, baseDir string, validate func(tool string, args json.RawMessage) error) (*Chain, error) {
	var ag *plan.Agent
	if p != nil {
		ag = p.Agent(agentAddr)
	}
	if ag == nil {
		return nil, fmt.Errorf("unknown agent %s", agentAddr)
	}
	links := make([]Link, 0, len(ag.Policies))
	var errs LoadErrors
	for _, addr := range ag.Policies {
		g, err := FromPlan(ctx, p, addr, baseDir)
		if err != nil {
			if le, ok := err.(LoadErrors); ok {
				errs = append(errs, le...)
				continue
			}
			return nil, err
		}
		links = append(links, Link{Address: addr, Gate: g})
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	c := NewChain(links, ag.Loop.OnNoPolicy, validate)
	tools := ag.EffectiveTools
	if len(tools) == 0 {
		tools = ag.Tools
	}
	for _, addr := range tools {
		if t := p.Tool(addr); t != nil && t.Approval == "always" {
			c.RequireApproval(addressName(t.Address))
		}
	}
	return c, nil
}
