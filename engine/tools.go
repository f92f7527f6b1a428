package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/engine/internal/estimate"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/plan/eval"
	"github.com/symbi-dev/symbi/provider"
)

// agentTools is one agent's tool set, prepared once per engine.
type agentTools struct {
	box   *builtins.Toolbox
	specs []provider.ToolSpec // what the model sees, after the profile
	// specTokens estimates specs, once rather than before every call.
	specTokens int64
	info       map[string]builtins.Info // by tool name, the visible tools only
	// withheld are the servers' tools the model is not offered, for the
	// started line.
	withheld []journal.WithheldTool
	// names are the visible tools in the order the model sees them, and
	// removed the servers' tools the profile took away.
	names, removed []string
	// gen is the toolbox's Generation these specs were made from: a
	// server's new tool list (list_changed) makes new ones.
	gen uint64
	// configured and servers are what the toolbox was built from, for
	// making the specs again.
	configured map[string]bool
	agent      *plan.Agent
}

// agentTools builds (once) the toolbox of agent a: its effective tools, its
// MCP servers' tools filtered by its profile, the delegate tool and the
// terminate tool.
func (e *Engine) agentTools(ctx context.Context, a *plan.Agent) (*agentTools, error) {
	var listings []builtins.ServerListing
	if rt := e.opts.Runtime; rt != nil && rt.ListServers != nil && e.hasServers(a) {
		// Asked before toolMu is taken: the runtime's call blocks this
		// coroutine, and another may build its toolbox meanwhile.
		e.toolMu.Lock()
		t, ok := e.toolboxes[a.Address]
		e.toolMu.Unlock()
		if ok {
			return t, nil
		}
		var err error
		if listings, err = rt.ListServers(ctx, a.Address); err != nil {
			return nil, fmt.Errorf("%s: tools: %w", a.Address, err)
		}
	}
	e.toolMu.Lock()
	defer e.toolMu.Unlock()
	if t, ok := e.toolboxes[a.Address]; ok {
		return t, nil
	}
	var tools []plan.Tool
	for _, addr := range a.EffectiveTools {
		if t := e.plan.Tool(addr); t != nil {
			tools = append(tools, *t)
		}
	}
	var servers []plan.MCPServer
	for _, addr := range a.Tools {
		if s := e.plan.MCPServer(addr); s != nil {
			servers = append(servers, *s)
		}
	}
	opts := e.toolboxOptions(tools)
	opts.Lock = e.plan.Lock
	opts.OnDrift = e.plan.Settings.OnDrift
	opts.ExecutableCache = filepath.Join(e.opts.StateDir, "executables.json")
	if rt := e.opts.Runtime; rt != nil {
		opts.Go, opts.Jitter = rt.Go, e.jitter
		opts.Execute = func(ctx context.Context, x builtins.Execution) (builtins.Result, error) {
			x.Agent = a.Address
			return rt.Execute(ctx, x)
		}
		if rt.ListServers != nil {
			opts.ListServers = func(context.Context, []plan.MCPServer) ([]builtins.ServerListing, error) {
				return listings, nil
			}
		}
	}
	if addr := e.knowledgeOf(a, tools); addr != "" && !e.opts.Discovery {
		store, err := e.knowledgeStore(addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Address, err)
		}
		opts.Knowledge = store
		if k := e.plan.KnowledgeStore(addr); k != nil {
			opts.Conventions = k.Conventions
		}
	}
	box, err := builtins.NewToolbox(ctx, tools, servers, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: tools: %w", a.Address, err)
	}
	configured := map[string]bool{}
	for _, t := range tools {
		configured[strings.TrimPrefix(t.Address, "tool.")] = true
	}
	t, err := e.toolSpecs(&agentTools{box: box, configured: configured, agent: a}, len(servers) > 0)
	if err != nil {
		box.Close()
		return nil, err
	}
	e.toolboxes[a.Address] = t
	return t, nil
}

// hasServers reports whether agent a's toolbox has MCP servers: its own,
// or those of tool blocks that wrap a server's tool.
func (e *Engine) hasServers(a *plan.Agent) bool {
	for _, addr := range a.Tools {
		if e.plan.MCPServer(addr) != nil {
			return true
		}
	}
	for _, addr := range a.EffectiveTools {
		if t := e.plan.Tool(addr); t != nil && t.Executor.MCP != nil {
			return true
		}
	}
	return false
}

// toolSpecs fills t's specs and info from its toolbox as it is now: the
// servers' tools filtered by the agent's profile, then the delegate and
// terminate tools. It returns t.
func (e *Engine) toolSpecs(t *agentTools, hasServers bool) (*agentTools, error) {
	a, box, configured := t.agent, t.box, t.configured
	t.gen = box.Generation()
	t.specs, t.info = nil, map[string]builtins.Info{}
	names := box.Names()
	if hasServers && a.ToolProfile != "" {
		if p := e.plan.ToolProfile(a.ToolProfile); p != nil {
			// Configured tools were filtered by the compiler; the servers'
			// tools are known only now.
			var fromServers []string
			for _, n := range names {
				if !configured[n] {
					fromServers = append(fromServers, n)
				}
			}
			keep := builtins.ApplyProfile(fromServers, p.Include, p.Exclude, 0)
			names = slices.DeleteFunc(names, func(n string) bool { return !configured[n] && !slices.Contains(keep, n) })
			if p.MaxTools > 0 && len(names) > p.MaxTools {
				names = names[:p.MaxTools]
			}
		}
	}
	t.names, t.removed, t.withheld = names, nil, nil
	for _, n := range box.Names() {
		if !slices.Contains(names, n) {
			t.removed = append(t.removed, n)
		}
	}
	for _, w := range box.Withheld() {
		t.withheld = append(t.withheld, journal.WithheldTool{Tool: w.Name, Source: w.Source, Reason: w.Reason})
	}
	for _, n := range names {
		info, _ := box.Info(n)
		t.info[n] = info
		// An MCP server's description is its own text: it is redacted
		// like a tool's output before a model sees it.
		t.specs = append(t.specs, provider.ToolSpec{Name: n, Description: e.secrets.Text(info.Description), Parameters: e.secrets.JSON(info.Parameters)})
	}
	if len(a.Delegates) > 0 {
		t.specs = append(t.specs, delegateSpec(a.Delegates))
	}
	if a.Loop.AllowTerminate {
		if _, clash := t.info[plan.TerminateTool]; clash {
			// The compiler refuses a configured tool of that name; an MCP
			// server's is known only now.
			return nil, fmt.Errorf("%s: a tool named %q clashes with the terminate tool of allow_terminate", a.Address, plan.TerminateTool)
		}
		t.specs = append(t.specs, terminateSpec())
	}
	t.specTokens = estimate.Tools(t.specs)
	return t, nil
}

// toolboxOptions are the options of a toolbox of tools: the engine's
// surroundings, and the servers of the tool blocks among tools that wrap a
// server's tool, connected for them alone.
func (e *Engine) toolboxOptions(tools []plan.Tool) builtins.Options {
	opts := builtins.Options{
		BaseDir:    e.opts.BaseDir,
		StateDir:   e.opts.StateDir,
		Workspace:  e.workspace(),
		Protected:  e.protected(),
		Resolve:    e.resolve,
		ResolveURL: e.resolveURL,
		Redact:     e.secrets.JSON,
		Reserved:   e.planToolNames(),
		Now:        e.opts.Now,
		Sleep:      e.opts.Sleep,
	}
	if e.inst.tracer != nil || e.inst.metrics {
		opts.Observe = e.observeTool
	}
	for _, t := range tools {
		if m := t.Executor.MCP; m != nil {
			if s := e.plan.MCPServer(m.Server); s != nil {
				opts.WrappedServers = append(opts.WrappedServers, *s)
			}
		}
	}
	return opts
}

// planToolNames are the names of every configured tool of the plan, which
// no MCP server's tool may take as it is: a policy shared by several agents
// names them, and Cedar gives each its configured effect and entities.
func (e *Engine) planToolNames() []string {
	out := make([]string, len(e.plan.Tools))
	for i, t := range e.plan.Tools {
		out[i] = strings.TrimPrefix(t.Address, "tool.")
	}
	// A command selector runs as a tool named after its block, a command
	// scorer as one named after it with ".scorer": a server's tool of such
	// a name must not pass for them in a policy.
	for _, b := range e.plan.BestOfN {
		if b.Selector.Kind == "command" {
			out = append(out, b.Address)
		}
		if b.Scorer.Kind == "command" {
			out = append(out, b.Address+scorerSuffix)
		}
	}
	return out
}

// protected are the paths no builtin file tool may touch besides the state
// directory: the plan's own files and those the caller names (var files, a
// saved plan).
func (e *Engine) protected() []builtins.Protected {
	out := builtins.ProtectedPaths(e.plan, e.opts.BaseDir)
	for _, p := range e.opts.Protected {
		out = append(out, builtins.Protected{Path: p, What: "a file of the configuration"})
	}
	return out
}

// workspace is the root of the file builtins: the plan's workspace,
// relative to the configuration directory, which is also the default.
func (e *Engine) workspace() string {
	ws := e.plan.Settings.Workspace
	if ws == "" || !filepath.IsAbs(ws) {
		ws = filepath.Join(e.opts.BaseDir, ws)
	}
	return ws
}

// knowledgeOf is the knowledge store agent a's recall_knowledge and
// store_knowledge tools use: the one its knowledge block names, else, for
// an agent that has such a tool, the plan's only store. Without one the
// tools answer that no store is configured.
func (e *Engine) knowledgeOf(a *plan.Agent, tools []plan.Tool) string {
	if a.Knowledge != nil && a.Knowledge.Store != "" {
		return a.Knowledge.Store
	}
	if len(e.plan.Knowledge) != 1 {
		return ""
	}
	for _, t := range tools {
		if b := t.Executor.Builtin; b == "recall_knowledge" || b == "store_knowledge" {
			return e.plan.Knowledge[0].Address
		}
	}
	return ""
}

// delegateSpec describes the delegate tool with the agent's delegates as
// the only allowed targets.
func delegateSpec(delegates []string) provider.ToolSpec {
	targets := make([]string, len(delegates))
	for i, d := range delegates {
		targets[i] = strings.TrimPrefix(d, "agent.")
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"target": map[string]any{"type": "string", "enum": targets, "description": "the agent to hand the task to"},
			"task":   map[string]any{"type": "string", "description": "what the agent should do, self-contained"},
		},
		"required":             []string{"target", "task"},
		"additionalProperties": false,
	})
	return provider.ToolSpec{
		Name:        plan.DelegateTool,
		Description: "Hand a task to another agent and get its answer. Targets: " + strings.Join(targets, ", "),
		Parameters:  schema,
	}
}

// resolve evaluates a deferred string (one that calls env()). Its value and
// every environment value it read may be secrets (a URL with a token in
// its path, a header "Bearer " + env("TOKEN")), so they join the redaction
// list before anyone can see them: the token alone is then redacted
// wherever it shows, in an error that quotes part of the URL as much as in
// a tool's echo.
func (e *Engine) resolve(s plan.String) (string, error) {
	if s.Deferred == nil {
		return s.Value, nil
	}
	v, err := eval.String(s, func(name string) (string, bool) {
		v, ok := e.opts.LookupEnv(name)
		if ok {
			e.addSecret(v)
		}
		return v, ok
	})
	if err != nil {
		return "", err
	}
	e.addSecret(v)
	return v, nil
}

// resolveURL is resolve for a URL: eval.URL percent-encodes each
// interpolated value for its place, so a token holding + or & is sent as it
// is. Each value read, its escaped form (what a server echoing the URL
// would quote) and the URL join the redaction list.
func (e *Engine) resolveURL(s plan.String) (string, error) {
	if s.Deferred == nil {
		return s.Value, nil
	}
	v, err := eval.URL(s, func(name string) (string, bool) {
		v, ok := e.opts.LookupEnv(name)
		if ok {
			e.addSecret(v)
			e.addSecret(eval.EscapeURLData(v))
		}
		return v, ok
	})
	if err != nil {
		return "", err
	}
	e.addSecret(v)
	return v, nil
}

// knowledgeStore opens (once per engine) the store of a knowledge block;
// bbolt locks its file, so every agent and tool of the engine shares one.
func (e *Engine) knowledgeStore(addr string) (builtins.KnowledgeStore, error) {
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	if s, ok := e.stores[addr]; ok {
		return s, nil
	}
	k := e.plan.KnowledgeStore(addr)
	if k == nil {
		return nil, fmt.Errorf("%w: %s is not in the plan", ErrNoKnowledgeStore, addr)
	}
	if rt := e.opts.Runtime; rt != nil && rt.Knowledge != nil {
		// The runtime reads the store where it lives (a worker's file).
		return rt.Knowledge(addr), nil
	}
	path := k.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(e.opts.BaseDir, path)
	}
	if !e.opts.ReadOnlyKnowledge {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
	}
	s, err := knowledge.OpenWith(path, knowledge.Options{ReadOnly: e.opts.ReadOnlyKnowledge})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if e.stores == nil {
		e.stores = map[string]*knowledge.Store{}
	}
	e.stores[addr] = s
	return s, nil
}
