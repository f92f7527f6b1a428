package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/symbi-dev/symbi/plan"
)

// FromPlan prepares the policy at addr ("policy.rules"): files are read
// relative to baseDir (through FileRef.Load, hash-checked), Rego is compiled
// and its query prepared, Cedar is parsed and validated. The compiler calls
// it to check a policy, the engine once per run. Errors are LoadErrors
// (errors.As) naming the file and line.
//
// FromPlan derives the plan's Cedar entities afresh on every call: to
// prepare several policies of one plan, use a Loader.
func FromPlan(ctx context.Context, p *plan.Plan, addr string, baseDir string) (Gate, error) {
	return NewLoader(p, baseDir).Gate(ctx, addr)
}

// Loader prepares the policies of one plan, each once. What a Cedar policy
// derives from the plan and its files (an entity for every tool and agent,
// each schema with those entities checked against it, each entities file
// merged with them) is built once per Loader and shared, never written, by
// every gate it returns: preparing N Cedar
// policies over M tools costs N+M, not N×M. The plan must not change while
// the Loader is in use. A Loader is safe for concurrent use.
type Loader struct {
	plan    *plan.Plan
	baseDir string

	planEntities func() types.EntityMap // once

	mu       sync.Mutex
	gates    map[string]loadedGate        // by policy address
	schemas  map[[2]string]*cedarSchema   // by path and sha256
	entities map[[2]string]loadedEntities // Cedar entities files, by path and sha256
}

type loadedGate struct {
	gate Gate
	err  error
}

type loadedEntities struct {
	entities types.EntityMap
	err      error
}

// NewLoader returns a Loader for p, reading files relative to baseDir.
func NewLoader(p *plan.Plan, baseDir string) *Loader {
	return &Loader{
		plan:         p,
		baseDir:      baseDir,
		planEntities: sync.OnceValue(func() types.EntityMap { return cedarPlanEntities(p) }),
		gates:        map[string]loadedGate{},
		schemas:      map[[2]string]*cedarSchema{},
		entities:     map[[2]string]loadedEntities{},
	}
}

// Gate prepares the policy at addr, as FromPlan does, once: agents that
// share a policy share its gate (gates are safe for concurrent use).
func (l *Loader) Gate(ctx context.Context, addr string) (Gate, error) {
	l.mu.Lock()
	got, ok := l.gates[addr]
	l.mu.Unlock()
	if ok {
		return got.gate, got.err
	}
	g, err := l.prepare(ctx, addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if got, ok := l.gates[addr]; ok {
		return got.gate, got.err // prepared meanwhile by another caller
	}
	l.gates[addr] = loadedGate{g, err}
	return g, err
}

func (l *Loader) prepare(ctx context.Context, addr string) (Gate, error) {
	p := l.plan
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
		return PrepareOPA(ctx, addr, *pol.OPA, l.baseDir)
	case pol.Kind == "cedar" && pol.Cedar != nil:
		return l.cedar(addr, *pol.Cedar)
	}
	return nil, LoadErrors{{Policy: addr, File: pol.Range.Filename, Line: pol.Range.Line, Err: fmt.Errorf("policy kind %q has no matching block (want rules, opa or cedar)", pol.Kind)}}
}

// schema parses a Cedar schema and checks the plan's entities against it,
// once per schema file; every policy that names the file shares the result.
func (l *Loader) schema(ref plan.FileRef) *cedarSchema {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := [2]string{ref.Path, ref.SHA256}
	if s, ok := l.schemas[key]; ok {
		return s
	}
	s := newCedarSchema(ref, l.baseDir, l.planEntities())
	l.schemas[key] = s
	return s
}

// fileEntities reads a Cedar entities file and merges the plan's entities
// into it, once per file; every policy that names the file shares the
// result, which none of them writes.
func (l *Loader) fileEntities(ref *plan.FileRef) (types.EntityMap, error) {
	if ref == nil {
		return cedarFileEntities(nil, l.baseDir, nil)
	}
	key := [2]string{ref.Path, ref.SHA256}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entities[key]; ok {
		return e.entities, e.err
	}
	ents, err := cedarFileEntities(ref, l.baseDir, l.planEntities())
	l.entities[key] = loadedEntities{ents, err}
	return ents, err
}

// ChainFromPlan builds the chain of the agent at agentAddr: its policies in
// order, its loop's on_no_policy, and approval = "always" for its tools that
// say so. validate is the tool-schema check for modified arguments.
func ChainFromPlan(ctx context.Context, p *plan.Plan, agentAddr, baseDir string, validate func(tool string, args json.RawMessage) error) (*Chain, error) {
	return NewLoader(p, baseDir).Chain(ctx, agentAddr, validate)
}

// Chain builds the chain of the agent at agentAddr, as ChainFromPlan does.
func (l *Loader) Chain(ctx context.Context, agentAddr string, validate func(tool string, args json.RawMessage) error) (*Chain, error) {
	p := l.plan
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
		g, err := l.Gate(ctx, addr)
		if err != nil {
			if le, ok := err.(LoadErrors); ok {
				errs = append(errs, le...)
				continue
			}
			return nil, err
		}
		link := Link{Address: addr, Gate: g}
		if pol := p.Policy(addr); pol != nil {
			link.Version, link.Shadow = Version(*pol), pol.Mode == plan.PolicyModeShadow
		}
		links = append(links, link)
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
