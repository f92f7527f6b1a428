package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
	"github.com/symbi-dev/symbi/policy"
)

// gate prints one policy's decision on an action object. The policy is
// prepared with policy.FromPlan, as the engine prepares it; the input is
// the one the engine would build for the agent that uses the policy (or the
// agent the action names with agent = agent.NAME).
func (s *Session) gate(ctx context.Context, c call) (string, hcl.Diagnostics) {
	name, rng, rest, restOff := c.word()
	if name == "" {
		return "", errorAt(c.nameRng, "Missing policy", ":gate needs a policy and an action object: :gate policy.NAME {type = \"tool_call\", tool = \"shell\", arguments = {cmd = \"ls\"}}")
	}
	p := s.cfg.Plan
	addr := name
	if !strings.HasPrefix(addr, "policy.") {
		addr = "policy." + addr
	}
	if p.Policy(addr) == nil {
		var names []string
		for _, x := range p.Policies {
			names = append(names, x.Address)
		}
		return "", errorAt(rng, "No such policy", "The configuration has no %s.%s", addr, suggest(addr, names))
	}
	if rest == "" {
		return "", errorAt(rng, "Missing action", "After the policy comes the action object, e.g. {type = \"tool_call\", tool = \"shell\", arguments = {cmd = \"sudo ls\"}}.")
	}
	obj, exprRng, diags := s.evalObject(c.line, restOff, len(c.line))
	if diags.HasErrors() {
		return "", diags
	}
	agent, diags := s.takeAgent(obj, exprRng)
	if diags.HasErrors() {
		return "", diags
	}
	if agent == "" {
		agent = agentUsingPolicy(p, addr)
	}
	action, diags := parseAction(obj, exprRng)
	if diags.HasErrors() {
		return "", diags
	}
	g, err := policy.FromPlan(ctx, p, addr, s.baseDir())
	if err != nil {
		return "", errorAt(rng, "Policy does not load", "%v", err)
	}
	in := policy.NewInput(p, agent, action, nil)
	start := s.opts.Now()
	d := g.Decide(ctx, in)
	elapsed := s.opts.Now().Sub(start)
	if d.Engine == "" {
		d.Engine = p.Policy(addr).Kind
	}

	var b strings.Builder
	w := newTable(&b)
	fmt.Fprintf(w, "decision\t%s\n", d.Outcome)
	if d.Reason != "" {
		fmt.Fprintf(w, "reason\t%s\n", d.Reason)
	}
	if d.Outcome == policy.Modify {
		fmt.Fprintf(w, "arguments\t%s\n", d.Arguments)
	}
	fmt.Fprintf(w, "engine\t%s\n", d.Engine)
	fmt.Fprintf(w, "time\t%s\n", render.Duration(elapsed))
	if agent != "" {
		fmt.Fprintf(w, "agent\t%s\n", agent)
	}
	w.Flush()
	return b.String(), nil
}

func agentUsingPolicy(p *plan.Plan, addr string) string {
	for _, a := range p.Agents {
		if contains(a.Policies, addr) {
			return a.Address
		}
	}
	return ""
}

// evalObject evaluates the object expression at line[start:end].
func (s *Session) evalObject(line string, start, end int) (map[string]cty.Value, hcl.Range, hcl.Diagnostics) {
	rng := rangeAt(line, start, len(strings.TrimRight(line[:end], " \t\r\n")))
	v, diags := s.evalAt(line, start, end)
	if diags.HasErrors() {
		return nil, rng, diags
	}
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, rng, errorAt(rng, "Not an object", "Expected an object such as {name = \"value\"}, got %s.", friendlyType(v))
	}
	if !v.IsWhollyKnown() {
		return nil, rng, errorAt(rng, "Unknown value", "The object has parts that are not known yet (a variable without a value?).")
	}
	return v.AsValueMap(), rng, nil
}

func friendlyType(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}

// takeAgent removes the optional agent attribute from an action object: a
// string ("researcher", "agent.researcher") or the agent itself
// (agent.researcher).
func (s *Session) takeAgent(obj map[string]cty.Value, rng hcl.Range) (string, hcl.Diagnostics) {
	v, ok := obj["agent"]
	if !ok {
		return "", nil
	}
	delete(obj, "agent")
	name, ok := addressOf(v)
	if !ok {
		return "", errorAt(rng, "Invalid agent", "agent must be an agent (agent.NAME) or its name as a string.")
	}
	a, diags := s.agentAt(name, rng)
	if diags.HasErrors() {
		return "", diags
	}
	return a.Address, nil
}

// addressOf reads a reference written as a string or as the block itself
// (whose value carries its address).
func addressOf(v cty.Value) (string, bool) {
	switch {
	case v.IsNull() || !v.IsKnown():
		return "", false
	case v.Type() == cty.String:
		return v.AsString(), true
	case v.Type().IsObjectType() && v.Type().HasAttribute("address"):
		a := v.GetAttr("address")
		if a.Type() == cty.String && a.IsKnown() && !a.IsNull() {
			return a.AsString(), true
		}
	}
	return "", false
}

// parseAction turns an action object into a policy.Action, as `symbi policy
// eval --action` does: tool and target may be the blocks themselves.
func parseAction(obj map[string]cty.Value, rng hcl.Range) (policy.Action, hcl.Diagnostics) {
	for _, k := range []string{"tool", "target"} {
		if v, ok := obj[k]; ok && v.Type().IsObjectType() {
			if a, ok := addressOf(v); ok {
				obj[k] = cty.StringVal(a)
			}
		}
	}
	raw, err := toJSON(cty.ObjectVal(obj))
	if err != nil {
		return policy.Action{}, errorAt(rng, "Invalid action", "%v", err)
	}
	a, err := policy.ParseAction(raw)
	if err != nil {
		return policy.Action{}, errorAt(rng, "Invalid action", "%v", err)
	}
	return a, nil
}

func toJSON(v cty.Value) ([]byte, error) {
	if len(v.Type().AttributeTypes()) == 0 && v.Type().IsObjectType() {
		return []byte("{}"), nil
	}
	return ctyjson.Marshal(v, v.Type())
}

// callTool runs one configured tool for the person at the REPL. The
// arguments are validated against the tool's schema, then gated through the
// policy chain of every agent that may use the tool, in address order, each
// seeing the action as the previous one left it: the call runs only when
// all of them allow it, which is the strictest reading of "the agents'
// policies" and never lets the REPL do what no agent could. An ask goes to
// the session's Approver (the person at the terminal); without one it is a
// denial. A tool no agent uses is refused: no policy could decide it.
func (s *Session) callTool(ctx context.Context, c call) (string, hcl.Diagnostics) {
	name, rng, rest, restOff := c.word()
	if name == "" {
		return "", errorAt(c.nameRng, "Missing tool", ":call needs a tool and its arguments: :call calculator {expression = \"6*7\"}")
	}
	p := s.cfg.Plan
	addr := name
	if !strings.HasPrefix(addr, "tool.") {
		addr = "tool." + addr
	}
	t := p.Tool(addr)
	if t == nil {
		var names []string
		for _, x := range p.Tools {
			names = append(names, x.Address)
		}
		return "", errorAt(rng, "No such tool", "The configuration has no %s.%s", addr, suggest(addr, names))
	}
	toolName := strings.TrimPrefix(t.Address, "tool.")
	args := json.RawMessage("{}")
	argsRng := rng
	if rest != "" {
		obj, r, diags := s.evalObject(c.line, restOff, len(c.line))
		if diags.HasErrors() {
			return "", diags
		}
		raw, err := toJSON(cty.ObjectVal(obj))
		if err != nil {
			return "", errorAt(r, "Invalid arguments", "%v", err)
		}
		args, argsRng = raw, r
	}

	var agents []string
	for _, a := range p.Agents {
		if contains(a.EffectiveTools, t.Address) {
			agents = append(agents, a.Address)
		}
	}
	if len(agents) == 0 {
		return "", errorAt(rng, "No agent uses this tool", "%s is in no agent's effective tools, so no policy could decide a call to it, and :call refuses it (fail closed). Add it to an agent's tools.", t.Address)
	}

	var servers []plan.MCPServer
	if t.Executor.MCP != nil {
		if m := p.MCPServer(t.Executor.MCP.Server); m != nil {
			servers = append(servers, *m)
		}
	}
	opts := builtins.Options{
		BaseDir:   s.baseDir(),
		StateDir:  s.stateDir(),
		Workspace: filepath.Join(s.baseDir(), p.Settings.Workspace),
		Protected: s.protected(),
		Resolve:   func(v plan.String) (string, error) { return eval.String(v, s.opts.LookupEnv) },
		Now:       s.opts.Now,
	}
	opts.ResolveURL = func(v plan.String) (string, error) { return eval.URL(v, s.opts.LookupEnv) }
	box, err := builtins.NewToolbox(ctx, []plan.Tool{*t}, servers, opts)
	if err != nil {
		return "", errorAt(rng, "Tool does not start", "%v", err)
	}
	defer box.Close()
	if err := box.Validate(toolName, args); err != nil {
		return "", errorAt(argsRng, "Invalid arguments", "%v", err)
	}
	// The policies decide on the canonical path arguments, as in a run.
	if args, err = box.Canonical(toolName, args); err != nil {
		return "", errorAt(argsRng, "Invalid arguments", "%v", err)
	}

	var b strings.Builder
	action := policy.Action{Type: policy.ToolCall, Tool: toolName, CallID: "repl", Arguments: args}
	if info, ok := box.Info(toolName); ok {
		// A wrapped MCP tool's annotations may make it stricter than the
		// plan says; NewInput keeps the stricter.
		action.Effect = info.Effect
	}
	var approved policy.Approved
	loader := policy.NewLoader(p, s.baseDir()) // shared by every agent's chain
	for _, agent := range agents {
		chain, err := loader.Chain(ctx, agent, box.Validate)
		if err != nil {
			return b.String(), errorAt(rng, "Policy does not load", "%v", err)
		}
		v := chain.Gate(ctx, policy.NewInput(p, agent, action, nil))
		fmt.Fprintf(&b, "%s: %s\n", agent, render.Decision(v.Decision))
		switch {
		case v.Approved.Valid():
			approved = v.Approved
		case v.Ask && s.opts.Approver == nil:
			fmt.Fprintf(&b, "not run: a person must approve it, and this session has no one to ask (input is not a terminal)\n")
			return b.String(), nil
		case v.Ask:
			now := s.opts.Now()
			a, rec, err := chain.Resolve(ctx, v, s.opts.Approver, policy.Request{ID: "repl", Agent: strings.TrimPrefix(agent, "agent."), Created: now, Expires: now.Add(policy.DefaultApprovalTimeout)})
			if err != nil {
				return b.String(), errorAt(rng, "Approval failed", "%v", err)
			}
			fmt.Fprintf(&b, "%s: %s\n", agent, render.Decision(rec.PersonDecision()))
			if rec.Approved && len(rec.Arguments) > 0 {
				// The person's arguments: checked and gated like the ones
				// typed after :call.
				a, err = s.gateEdited(ctx, &b, box, chain, agent, action, rec)
				if err != nil {
					fmt.Fprintf(&b, "not run: %v\n", err)
					return b.String(), nil
				}
			}
			if rec.Remember != nil {
				b.WriteString("(a rule to remember applies to the rest of a run; :call runs one call, and keeps none)\n")
			}
			if !a.Valid() {
				b.WriteString("not run\n")
				return b.String(), nil
			}
			approved = a
		default:
			b.WriteString("not run\n")
			return b.String(), nil
		}
		action = approved.Action()
	}
	res, err := box.Call(ctx, approved)
	if err != nil {
		var f *builtins.Failure
		kind := "error"
		if errors.As(err, &f) {
			kind = string(f.Kind)
		}
		return b.String(), errorAt(rng, "Tool failed ("+kind+")", "%v", err)
	}
	b.WriteString(res.Content)
	if !strings.HasSuffix(res.Content, "\n") {
		b.WriteString("\n")
	}
	if res.Truncated {
		b.WriteString("(output truncated at max_output_bytes)\n")
	}
	return b.String(), nil
}

// protected are the paths :call's file builtins may not touch, besides
// the state directory: the configuration's own files and the var files.
func (s *Session) protected() []builtins.Protected {
	out := builtins.ProtectedPaths(s.cfg.Plan, s.baseDir())
	for _, f := range s.opts.VarFiles {
		out = append(out, builtins.Protected{Path: f, What: "a file of the configuration"})
	}
	return out
}

// gateEdited checks arguments a person approved instead of the ones given
// (schema, canonical paths) and puts them through the agent's chain
// again: what they allow runs; an ask is answered by the person's approval
// of exactly those arguments.
func (s *Session) gateEdited(ctx context.Context, b *strings.Builder, box *builtins.Toolbox, chain *policy.Chain, agent string, action policy.Action, rec policy.ApprovalRecord) (policy.Approved, error) {
	if err := box.Validate(action.Tool, rec.Arguments); err != nil {
		return policy.Approved{}, fmt.Errorf("the edited arguments are refused: %w", err)
	}
	args, err := box.Canonical(action.Tool, rec.Arguments)
	if err != nil {
		return policy.Approved{}, fmt.Errorf("the edited arguments are refused: %w", err)
	}
	edited := action
	edited.Arguments = args
	v := chain.Gate(ctx, policy.NewInput(s.cfg.Plan, agent, edited, nil))
	fmt.Fprintf(b, "%s: %s (the edited arguments, gated again)\n", agent, render.Decision(v.Decision))
	if v.Decision.Outcome == policy.Deny {
		return policy.Approved{}, fmt.Errorf("the edited arguments are denied")
	}
	rec.Arguments = args
	return chain.ApproveEdited(v, rec)
}
