package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/plan"
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

// callTool runs one tool for the person at the REPL: a configured tool,
// or a tool of an agent's MCP server. The arguments are validated against
// the tool's schema, then gated through the policy chain of every agent
// whose runs offer the tool, in address order, each seeing the action as
// the previous one left it: the call runs only when all of them allow it,
// which is the strictest reading of "the agents' policies" and never lets
// the REPL do what no agent could. An ask goes to the session's Approver
// (the person at the terminal); without one it is a denial. A tool no
// agent is offered is refused: no policy could decide it. The call runs
// through the toolbox a run of the first such agent uses (the session's
// tool engine, which starts the agent's MCP servers once for the session).
func (s *Session) callTool(ctx context.Context, c call) (string, hcl.Diagnostics) {
	name, rng, rest, restOff := c.word()
	if name == "" {
		return "", errorAt(c.nameRng, "Missing tool", ":call needs a tool and its arguments: :call calculator {expression = \"6*7\"}")
	}
	args := json.RawMessage("{}")
	argsRng := rng
	if rest != "" {
		raw, r, diags := s.callArguments(c.line, restOff)
		if diags.HasErrors() {
			return "", diags
		}
		args, argsRng = raw, r
	}
	eng, err := s.toolEngine()
	if err != nil {
		return "", errorAt(rng, "Tools did not start", "%v", err)
	}
	toolName, agents, configured, diags := s.callAgents(ctx, eng, name, rng)
	if diags.HasErrors() {
		return "", diags
	}
	// A configured tool runs through the session's toolbox of every tool
	// block, which starts no agent's servers; a server's tool through the
	// toolbox of the first agent offered it.
	toolbox := func(agent string) (*builtins.Toolbox, error) {
		if configured {
			return eng.PlanToolbox(ctx)
		}
		return eng.Toolbox(ctx, agent)
	}
	box, err := toolbox(agents[0])
	if err != nil {
		return "", errorAt(rng, "Tools did not start", "%v", err)
	}
	if _, ok := box.Info(toolName); !ok {
		for _, w := range box.Withheld() {
			if w.Source == "tool."+toolName {
				return "", errorAt(rng, "Tool not offered", "tool.%s is not offered to any model: %s %s.", toolName, w.Name, w.Reason)
			}
		}
	}
	if err := box.Validate(toolName, args); err != nil {
		return "", errorAt(argsRng, "Invalid arguments", "%v", err)
	}
	// The policies decide on the canonical path arguments, as in a run.
	if args, err = box.Canonical(toolName, args); err != nil {
		return "", errorAt(argsRng, "Invalid arguments", "%v", err)
	}

	p := s.cfg.Plan
	var b strings.Builder
	action := policy.Action{Type: policy.ToolCall, Tool: toolName, CallID: "repl", Arguments: args}
	if info, ok := box.Info(toolName); ok {
		// A server's tool, or a wrapped one, may be stricter than the plan
		// says; NewInput keeps the stricter.
		action.Effect, action.Tags = info.Effect, info.Tags
	}
	var approved policy.Approved
	loader := policy.NewLoader(p, s.baseDir()) // shared by every agent's chain
	for _, agent := range agents {
		agentBox, err := toolbox(agent)
		if err != nil {
			return b.String(), errorAt(rng, "Tools did not start", "%v", err)
		}
		chain, err := loader.Chain(ctx, agent, agentBox.Validate)
		if err != nil {
			return b.String(), errorAt(rng, "Policy does not load", "%v", err)
		}
		if info, ok := agentBox.Info(toolName); ok && info.Approval == "always" {
			chain.RequireApproval(toolName)
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
	if note := res.TruncationNote(); note != "" {
		b.WriteString(note + "\n")
	}
	return b.String(), nil
}

// callAgents finds the tool :call names and the agents whose runs offer
// it: a configured tool (name or tool.NAME) goes to the agents whose
// effective tools hold it; any other name is looked up among the tools of
// the agents' MCP servers, which are started for it.
func (s *Session) callAgents(ctx context.Context, eng *engine.Engine, name string, rng hcl.Range) (tool string, agents []string, configured bool, _ hcl.Diagnostics) {
	p := s.cfg.Plan
	addr := name
	if !strings.HasPrefix(addr, "tool.") {
		addr = "tool." + addr
	}
	if t := p.Tool(addr); t != nil {
		for _, a := range p.Agents {
			if contains(a.EffectiveTools, t.Address) {
				agents = append(agents, a.Address)
			}
		}
		if len(agents) == 0 {
			return "", nil, true, errorAt(rng, "No agent uses this tool", "%s is in no agent's effective tools, so no policy could decide a call to it, and :call refuses it (fail closed). Add it to an agent's tools.", t.Address)
		}
		return strings.TrimPrefix(t.Address, "tool."), agents, true, nil
	}
	// A server's tool: every agent with servers is asked, in address order.
	var names []string
	for _, a := range p.Agents {
		if !hasServer(p, a) {
			continue
		}
		set, err := eng.ToolsOf(ctx, a.Address)
		if err != nil {
			return "", nil, false, errorAt(rng, "Tools did not start", "%v", err)
		}
		for _, t := range set.Tools {
			names = append(names, t.Name)
			if t.Name == name {
				agents = append(agents, a.Address)
			}
		}
		for _, w := range set.Withheld {
			if w.Name == name {
				return "", nil, false, errorAt(rng, "Tool not offered", "%s of %s is not offered to any model: it %s.", w.Name, w.Source, w.Reason)
			}
		}
	}
	if len(agents) == 0 {
		for _, t := range p.Tools {
			names = append(names, t.Address)
		}
		return "", nil, false, errorAt(rng, "No such tool", "No agent is offered a tool %s: the configuration has no %s, and no agent's MCP server has one.%s", name, addr, suggest(name, names))
	}
	return name, agents, false, nil
}

// hasServer reports whether an agent lists an MCP server.
func hasServer(p *plan.Plan, a plan.Agent) bool {
	for _, addr := range a.Tools {
		if p.MCPServer(addr) != nil {
			return true
		}
	}
	return false
}

// callArguments evaluates :call's arguments: an object expression, or a
// string that holds them as JSON text ('{"expression": "6*7"}', the
// output of jsonencode). Text that is not JSON is reported as such, with
// where it stops being JSON.
func (s *Session) callArguments(line string, start int) (json.RawMessage, hcl.Range, hcl.Diagnostics) {
	rng := rangeAt(line, start, len(strings.TrimRight(line, " \t\r\n")))
	v, diags := s.evalAt(line, start, len(line))
	if diags.HasErrors() {
		return nil, rng, diags
	}
	v, _ = v.UnmarkDeep()
	if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		text := []byte(v.AsString())
		if err := policy.InvalidJSON(text); err != nil {
			return nil, rng, errorAt(rng, "Invalid arguments", "The arguments are %v.", err)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(text, &obj) != nil || obj == nil {
			return nil, rng, errorAt(rng, "Invalid arguments", "The arguments must be a JSON object such as {\"name\": \"value\"}.")
		}
		return json.RawMessage(text), rng, nil
	}
	obj, r, diags := s.evalObject(line, start, len(line))
	if diags.HasErrors() {
		return nil, r, diags
	}
	raw, err := toJSON(cty.ObjectVal(obj))
	if err != nil {
		return nil, r, errorAt(r, "Invalid arguments", "%v", err)
	}
	return raw, r, nil
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
