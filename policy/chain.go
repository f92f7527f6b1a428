package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

// Link is one policy of a chain: its address and its prepared gate.
type Link struct {
	Address string // "policy.rules"
	Gate    Gate
	// Version is the policy's digest (Version), recorded on each of its
	// decisions.
	Version string
	// Shadow: the policy is in shadow mode (mode = "shadow"): evaluated on
	// every action the chain decides, never enforced.
	Shadow bool
}

// Chain runs an agent's policies in the order listed. It is immutable once
// built and safe for concurrent use.
type Chain struct {
	links      []Link // enforced, in order
	shadows    []Link // in shadow mode, in order
	onNoPolicy string
	validate   func(tool string, args json.RawMessage) error
	always     map[string]bool // tools with approval = "always"
}

// NewChain builds a chain. onNoPolicy ("deny" or "allow"; empty is "deny")
// decides a tool call or delegation that every policy found not applicable.
// validate checks arguments a modify decision produced against the tool's
// schema; nil accepts any object.
func NewChain(links []Link, onNoPolicy string, validate func(tool string, args json.RawMessage) error) *Chain {
	if onNoPolicy == "" {
		onNoPolicy = plan.DefaultOnNoPolicy
	}
	c := &Chain{onNoPolicy: onNoPolicy, validate: validate, always: map[string]bool{}}
	for _, l := range links {
		if l.Shadow {
			c.shadows = append(c.shadows, l)
		} else {
			c.links = append(c.links, l)
		}
	}
	return c
}

// RequireApproval marks tools (by name) whose calls a person must approve
// even when the policies allow them: approval = "always". It returns c for
// chaining and must be called before the chain is shared.
func (c *Chain) RequireApproval(tools ...string) *Chain {
	for _, t := range tools {
		c.always[t] = true
	}
	return c
}

// Links returns the chain's enforced policies in order.
func (c *Chain) Links() []Link { return c.links }

// Shadows returns the chain's policies in shadow mode, in order.
func (c *Chain) Shadows() []Link { return c.shadows }

// Verdict is the chain's answer for one action.
type Verdict struct {
	// Decision is the final decision: the deny that stopped the chain, the
	// ask that needs a person, or the allow (modify when arguments changed)
	// that lets the action through. Engine "chain" marks on_no_policy.
	Decision Decision
	// Decisions are every policy's decisions, in order, for the journal.
	Decisions []Decision
	// Action is the action as the last policy saw it, arguments modified.
	Action Action
	// Approved is Valid only when the action may run now: allowed or
	// modified, and no person needs to approve it.
	Approved Approved
	// Ask is true when a person must decide (an ask decision, or a tool with
	// approval = "always"); pass the verdict to Resolve.
	Ask bool
	// Shadow are the decisions of the policies in shadow mode, each on the
	// action as the chain was given it: journalled, never enforced.
	Shadow []Decision
}

// Gate decides in.Action with every policy of the chain. A deny stops the
// chain; a modify hands the modified action to the next policy, after its
// arguments pass validate; an ask is remembered, and a later deny still wins.
//
// The evaluation order, which every decision records (Decision.Order):
// the enforced policies in the agent's order, each on the action as the
// policies before it left it, up to the first deny; then every policy in
// shadow mode, in the agent's order, each on the action as the chain was
// given it (what the enforced chain decided changes nothing a shadow
// policy sees, so its decision is what it would decide in the first place
// of the chain), whatever the enforced policies decided.
func (c *Chain) Gate(ctx context.Context, in Input) Verdict {
	v := c.enforce(ctx, in)
	order := len(v.Decisions)
	for _, link := range c.shadows {
		order++
		d := c.decide(ctx, link, in, order)
		d.Shadow = true
		v.Shadow = append(v.Shadow, d)
	}
	return v
}

// decide is one policy's decision on in, stamped with the policy, its
// version, its place in the order and the time taken; an outcome the
// engine does not know is an engine error, a deny.
func (c *Chain) decide(ctx context.Context, link Link, in Input, order int) Decision {
	start := time.Now()
	d := decideSafely(ctx, link.Gate, in)
	d.Elapsed = time.Since(start)
	d.Policy = link.Address
	if !d.Outcome.valid() {
		d = Decision{Outcome: Deny, Reason: fmt.Sprintf("policy returned an unknown decision %q", d.Outcome), Policy: link.Address, Engine: d.Engine, Elapsed: d.Elapsed, EngineError: true}
	}
	d.Version, d.Order = link.Version, order
	return d
}

// enforce runs the enforced policies (see Gate).
func (c *Chain) enforce(ctx context.Context, in Input) Verdict {
	v := Verdict{Action: in.Action}
	var asked *Decision
	modified, applied := false, false
	for i, link := range c.links {
		in.Action = v.Action
		d := c.decide(ctx, link, in, i+1)
		if d.Outcome == Modify {
			if err := c.checkModify(v.Action, d.Arguments); err != nil {
				d = Decision{Outcome: Deny, Reason: fmt.Sprintf("%s modified the arguments of %s, and the result is refused: %v", link.Address, v.Action, err), Policy: link.Address, Engine: d.Engine, Elapsed: d.Elapsed, Version: d.Version, Order: d.Order}
			}
		}
		v.Decisions = append(v.Decisions, d)
		switch d.Outcome {
		case Deny:
			v.Decision = d
			return v
		case Modify:
			v.Action.Arguments = d.Arguments
			modified, applied = true, true
		case Allow:
			applied = true
		case Ask:
			applied = true
			if asked == nil {
				asked = &v.Decisions[len(v.Decisions)-1]
			}
		}
	}
	switch {
	case asked != nil:
		v.Decision = *asked
		v.Ask = true
		return v
	case !applied:
		v.Decision = c.noPolicy(in)
		if v.Decision.Outcome == Deny {
			return v
		}
	case modified:
		v.Decision = Decision{Outcome: Modify, Reason: "arguments modified by policy", Arguments: v.Action.Arguments, Engine: "chain"}
		for _, d := range v.Decisions {
			if d.Outcome == Modify {
				v.Decision = d
				v.Decision.Arguments = v.Action.Arguments
			}
		}
	default:
		v.Decision = v.Decisions[len(v.Decisions)-1]
		for _, d := range v.Decisions {
			if d.Outcome == Allow {
				v.Decision = d
				break
			}
		}
	}
	if v.Action.Type == ToolCall && c.always[v.Action.Tool] {
		v.Ask = true
		return v
	}
	v.Approved = approve(v.Action, v.Decisions)
	return v
}

// decideSafely keeps a panicking engine from taking the run down with it:
// the panic is a deny, like any other engine failure.
func decideSafely(ctx context.Context, g Gate, in Input) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = Decision{Outcome: Deny, Reason: fmt.Sprintf("policy engine failed: %v", r), EngineError: true}
		}
	}()
	if err := ctx.Err(); err != nil {
		return Decision{Outcome: Deny, Reason: fmt.Sprintf("not decided: %v", err), EngineError: true}
	}
	return g.Decide(ctx, in)
}

func (c *Chain) checkModify(a Action, args json.RawMessage) error {
	if a.Type != ToolCall {
		return fmt.Errorf("only a tool call's arguments can be modified, not a %s's", a.Type)
	}
	if _, err := argumentsObject(args); err != nil {
		return fmt.Errorf("the new arguments are not a JSON object: %w", err)
	}
	if c.validate == nil {
		return nil
	}
	if err := c.validate(a.Tool, args); err != nil {
		return fmt.Errorf("they fail the tool's schema: %w", err)
	}
	return nil
}

// noPolicy applies on_no_policy. Its deny says how to fix it, because the
// first time an author meets it is usually a missing policy.
func (c *Chain) noPolicy(in Input) Decision {
	d := Decision{Outcome: Allow, Engine: "chain"}
	switch in.Action.Type {
	case Respond, Terminate:
		d.Reason = fmt.Sprintf("no policy addresses %s; %s is allowed unless a policy denies it", in.Action.Type, in.Action.Type)
		return d
	}
	if c.onNoPolicy == "allow" {
		d.Reason = fmt.Sprintf("no policy addresses %s; allowed by on_no_policy = \"allow\"", in.Action)
		return d
	}
	d.Outcome = Deny
	what := fmt.Sprintf("%q", in.Action.Tool)
	if in.Action.Type == Delegate {
		what = fmt.Sprintf("\"delegate:target=%s\"", in.Action.Target)
	}
	switch {
	case len(c.links) == 0 && len(c.shadows) > 0:
		d.Reason = fmt.Sprintf("agent.%s has no enforced policies (all of its policies are in shadow mode, which never decide), so %s is denied (on_no_policy = \"deny\", fail closed); add an enforced policy that allows it, e.g. rules { allow = [%s] }, or set loop { on_no_policy = \"allow\" }",
			in.Agent.Name, in.Action, what)
	case len(c.links) == 0:
		d.Reason = fmt.Sprintf("agent.%s has no policies, so %s is denied (on_no_policy = \"deny\", fail closed); add a policy to the agent's policies, e.g. policy \"rules\" { rules { allow = [%s] } }, or set loop { on_no_policy = \"allow\" }",
			in.Agent.Name, in.Action, what)
	default:
		d.Reason = fmt.Sprintf("no policy of agent.%s addresses %s, so it is denied (on_no_policy = \"deny\", fail closed); allow it in one of the agent's policies, e.g. rules { allow = [%s] }, or set loop { on_no_policy = \"allow\" }",
			in.Agent.Name, in.Action, what)
	}
	return d
}
