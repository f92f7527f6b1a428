package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/plan"
)

// Discovery: the tools a configuration offers, MCP servers' included,
// without running an agent. A server's tools are known only once it runs,
// so `symbi tools` and the REPL's :tools and :call start the servers here,
// through the toolboxes a run would build (agentTools): the names, schemas
// and effects they show are those the model and the gate see.

// Tool is one tool as a run offers it: what the model and the policies see
// (builtins.Info, whose Effect is the one the gate decides on: a server
// tool's or a wrapping block's declared effect raised by the tool's
// annotations), and where it comes from.
type Tool struct {
	builtins.Info
	// Kind is the executor: builtin, command, http or mcp.
	Kind string `json:"kind"`
	// Builtin names a builtin tool's builtin.
	Builtin string `json:"builtin,omitempty"`
	// Signature is the arguments in one line (builtins.Signature).
	Signature string `json:"signature"`
	// Agents are the agents whose models are offered the tool (in plan
	// order); none for a tool no agent has.
	Agents []string `json:"agents"`
	// RemovedBy are the agents that list the tool (or its server) but
	// whose tool_profile removed it.
	RemovedBy []string `json:"removed_by,omitempty"`
}

// Origin says where a tool comes from, in a few words: "builtin
// calculator", "command", "http", "mcp_server.fs" for a server's tool,
// "mcp_server.fs: read_file" when the server names it otherwise (the tool
// was renamed fs__read_file) or a tool block wraps it.
func (t Tool) Origin() string {
	switch {
	case t.Kind == "builtin":
		return "builtin " + t.Builtin
	case t.Server != "" && (t.ServerTool != t.Name || strings.HasPrefix(t.Source, "tool.")):
		return t.Server + ": " + t.ServerTool
	case t.Server != "":
		return t.Server
	}
	return t.Kind
}

// Withheld is a tool of an MCP server that no run offers, and why, with
// the agents that would have had it.
type Withheld struct {
	builtins.Withheld
	Agents []string `json:"agents"`
}

// Catalog is every tool of a configuration: each agent's tools as its runs
// offer them, then the tools and servers no agent has.
type Catalog struct {
	Tools    []Tool     `json:"tools"`
	Withheld []Withheld `json:"withheld"`
}

// AgentToolSet is one agent's tools as its runs offer them.
type AgentToolSet struct {
	Agent string `json:"agent"`
	// Tools are in the order the model sees them: the configured tools
	// the compiler kept after the tool_profile, then the servers' tools
	// the profile kept. The engine's own delegate and terminate tools are
	// not among them.
	Tools []Tool `json:"tools"`
	// Removed are the tools the tool_profile took away: configured tools
	// (the compiler left them out of effective_tools), then servers' tools.
	Removed  []string            `json:"removed"`
	Withheld []builtins.Withheld `json:"withheld"`
}

// ToolsOf returns an agent's tools as its runs offer them, starting its
// MCP servers (once for the engine, which Close stops). ctx bounds the
// start.
func (e *Engine) ToolsOf(ctx context.Context, agent string) (*AgentToolSet, error) {
	e.registerSecrets()
	addr, err := e.AgentAddress(agent)
	if err != nil {
		return nil, err
	}
	at, err := e.agentTools(ctx, e.plan.Agent(addr))
	if err != nil {
		return nil, startError(ctx, err)
	}
	a := e.plan.Agent(addr)
	set := &AgentToolSet{Agent: addr, Tools: []Tool{}, Removed: []string{}, Withheld: append([]builtins.Withheld{}, at.box.Withheld()...)}
	for _, t := range a.Tools {
		if e.plan.Tool(t) != nil && !slices.Contains(a.EffectiveTools, t) {
			set.Removed = append(set.Removed, strings.TrimPrefix(t, "tool."))
		}
	}
	set.Removed = append(set.Removed, at.removed...)
	for _, n := range at.names {
		set.Tools = append(set.Tools, e.toolOf(at.info[n]))
	}
	return set, nil
}

// Toolbox returns the toolbox an agent's runs use, its servers started:
// the REPL's :call validates, canonicalises and calls through it. The
// engine owns it; Close stops it.
func (e *Engine) Toolbox(ctx context.Context, agent string) (*builtins.Toolbox, error) {
	e.registerSecrets()
	addr, err := e.AgentAddress(agent)
	if err != nil {
		return nil, err
	}
	at, err := e.agentTools(ctx, e.plan.Agent(addr))
	if err != nil {
		return nil, startError(ctx, err)
	}
	return at.box, nil
}

// PlanToolbox returns one toolbox of every tool block of the plan (no MCP
// server joins whole; the servers of blocks that wrap a server's tool are
// started for them), built as an agent's toolbox is: the REPL's :call runs
// a configured tool through it, without starting the servers of the
// agents that have it. The engine owns it; Close stops it.
func (e *Engine) PlanToolbox(ctx context.Context) (*builtins.Toolbox, error) {
	e.registerSecrets()
	e.toolMu.Lock()
	defer e.toolMu.Unlock()
	if t, ok := e.toolboxes[planToolboxKey]; ok {
		return t.box, nil
	}
	box, err := builtins.NewToolbox(ctx, e.plan.Tools, nil, e.toolboxOptions(e.plan.Tools))
	if err != nil {
		return nil, startError(ctx, err)
	}
	e.toolboxes[planToolboxKey] = &agentTools{box: box}
	return box, nil
}

// planToolboxKey keeps PlanToolbox's toolbox beside the agents' (no agent
// address has a space), so Close stops it with them.
const planToolboxKey = "plan tools"

// Catalog lists every tool of the configuration: each agent's, as its runs
// offer them, and the tools and servers' tools no agent has (a tool block
// no agent lists, a server only tool blocks wrap), each once with the
// agents that have it. It starts every MCP server of the plan; ctx bounds
// the start. The agents' toolboxes stay up for the engine's life; the one
// for tools no agent has is closed before Catalog returns.
func (e *Engine) Catalog(ctx context.Context) (*Catalog, error) {
	e.registerSecrets()
	c := &Catalog{Tools: []Tool{}, Withheld: []Withheld{}}
	byKey := map[string]int{}      // source and name -> index in c.Tools
	withheldAt := map[string]int{} // source and name -> index in c.Withheld
	add := func(t Tool, agent, removedBy string) {
		key := t.Source + "\x00" + t.Name
		i, ok := byKey[key]
		if !ok {
			t.Agents = []string{}
			c.Tools = append(c.Tools, t)
			i = len(c.Tools) - 1
			byKey[key] = i
		}
		if agent != "" && !slices.Contains(c.Tools[i].Agents, agent) {
			c.Tools[i].Agents = append(c.Tools[i].Agents, agent)
		}
		if removedBy != "" && !slices.Contains(c.Tools[i].RemovedBy, removedBy) {
			c.Tools[i].RemovedBy = append(c.Tools[i].RemovedBy, removedBy)
		}
	}
	hold := func(w builtins.Withheld, agent string) {
		key := w.Source + "\x00" + w.Name
		i, ok := withheldAt[key]
		if !ok {
			c.Withheld = append(c.Withheld, Withheld{Withheld: w, Agents: []string{}})
			i = len(c.Withheld) - 1
			withheldAt[key] = i
		}
		if agent != "" && !slices.Contains(c.Withheld[i].Agents, agent) {
			c.Withheld[i].Agents = append(c.Withheld[i].Agents, agent)
		}
	}
	usedTools, usedServers := map[string]bool{}, map[string]bool{}
	removedBy := map[string][]string{} // configured tools a profile removed, by address
	for i := range e.plan.Agents {
		a := &e.plan.Agents[i]
		at, err := e.agentTools(ctx, a)
		if err != nil {
			return nil, startError(ctx, err)
		}
		for _, n := range at.names {
			add(e.toolOf(at.info[n]), a.Address, "")
		}
		for _, n := range at.removed {
			info, _ := at.box.Info(n)
			add(e.toolOf(info), "", a.Address)
		}
		for _, w := range at.box.Withheld() {
			hold(w, a.Address)
		}
		for _, addr := range a.EffectiveTools {
			usedTools[addr] = true
		}
		for _, addr := range a.Tools {
			if e.plan.Tool(addr) != nil && !slices.Contains(a.EffectiveTools, addr) {
				removedBy[addr] = append(removedBy[addr], a.Address)
			}
		}
		for _, addr := range a.Tools {
			if e.plan.MCPServer(addr) != nil {
				usedServers[addr] = true
			}
		}
	}
	// What no agent has, in one toolbox of its own.
	var tools []plan.Tool
	for _, t := range e.plan.Tools {
		if !usedTools[t.Address] {
			tools = append(tools, t)
		}
	}
	var servers []plan.MCPServer
	for _, s := range e.plan.MCPServers {
		if !usedServers[s.Address] {
			servers = append(servers, s)
		}
	}
	if len(tools) == 0 && len(servers) == 0 {
		return c, nil
	}
	opts := e.toolboxOptions(tools)
	// A server that only tool blocks wrap has tools nobody is offered: they
	// are listed too.
	for _, s := range opts.WrappedServers {
		if !usedServers[s.Address] && !slices.ContainsFunc(servers, func(x plan.MCPServer) bool { return x.Address == s.Address }) {
			servers = append(servers, s)
		}
	}
	box, err := builtins.NewToolbox(ctx, tools, servers, opts)
	if err != nil {
		return nil, startError(ctx, fmt.Errorf("the tools no agent has: %w", err))
	}
	defer box.Close()
	for _, info := range box.Tools() {
		add(e.toolOf(info), "", "")
		if i, ok := byKey[info.Source+"\x00"+info.Name]; ok && len(c.Tools[i].RemovedBy) == 0 {
			c.Tools[i].RemovedBy = removedBy[info.Source]
		}
	}
	for _, w := range box.Withheld() {
		hold(w, "")
	}
	return c, nil
}

// toolOf is the catalog's view of a toolbox's tool.
func (e *Engine) toolOf(info builtins.Info) Tool {
	t := Tool{Info: info, Kind: "mcp", Signature: builtins.Signature(info.Parameters)}
	if pt := e.plan.Tool(info.Source); pt != nil {
		t.Kind, t.Builtin = pt.Executor.Kind, pt.Executor.Builtin
	}
	// An MCP server's description is its own text: the engine redacts it
	// as it does before a model sees it.
	t.Description = e.secrets.Text(t.Description)
	t.Parameters = e.secrets.JSON(t.Parameters)
	return t
}

// startError says that servers did not start in time when ctx ended.
func startError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w (the MCP servers did not start and list their tools in time)", err)
	}
	return err
}
