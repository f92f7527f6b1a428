package engine

import (
	"context"
	"path/filepath"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
)

// ErrToolDrift is the cause of a run refused because an MCP server or a
// command tool differs from the lock file (on_drift = "refuse"): at the
// start, the run does not start; mid-run, after a server's list_changed,
// it stops. Test with errors.Is; the error's text is the readable diff.
var ErrToolDrift = builtins.ErrDrift

// recordDrifts journals what the toolbox found different from the lock
// and what it did (hid a tool, warned), one tool_drift line each.
func (r *run) recordDrifts(ds []builtins.Drift) {
	for _, d := range ds {
		data := journal.ToolDriftData{
			Kind:        string(d.Change.Kind),
			Tool:        d.Change.Tool,
			Summary:     d.Change.Summary(),
			Details:     d.Change.Details,
			Action:      d.Action,
			ListChanged: d.ListChanged,
		}
		if d.Change.Server != "" {
			data.Server = "mcp_server." + d.Change.Server
		}
		_ = r.record(journal.ToolDrift, data)
	}
}

// startDrifts journals the drifts the toolbox found when its servers
// started: every run of the agent runs with what was hidden or warned of.
func (r *run) startDrifts() {
	var ds []builtins.Drift
	for _, d := range r.tools.box.Drifts() {
		if !d.ListChanged {
			ds = append(ds, d)
		}
	}
	r.recordDrifts(ds)
}

// syncTools takes a server's new tool list before the model is offered
// the tools or a call is gated: when a server said its tools changed
// (list_changed), the toolbox lists them again and checks them against the
// lock (Refresh); the drifts are journalled, a refused one ends the run,
// and the agent's specs are made again from what the toolbox now holds.
func (r *run) syncTools(ctx context.Context) error {
	box := r.tools.box
	if !box.ListChanged() && box.Generation() == r.tools.gen {
		return nil
	}
	drifts, err := box.Refresh(ctx)
	r.recordDrifts(drifts)
	if err != nil {
		return err
	}
	t, err := r.e.refreshTools(r.tools)
	if err != nil {
		return err
	}
	r.tools = t
	return nil
}

// refreshTools is the agent's tools made again from its toolbox, when the
// toolbox changed since t was made; the engine keeps the newest for the
// agent's other runs.
func (e *Engine) refreshTools(t *agentTools) (*agentTools, error) {
	e.toolMu.Lock()
	defer e.toolMu.Unlock()
	if cur, ok := e.toolboxes[t.agent.Address]; ok && cur.box == t.box && cur.gen == t.box.Generation() {
		return cur, nil
	}
	fresh, err := e.toolSpecs(&agentTools{box: t.box, configured: t.configured, agent: t.agent}, true)
	if err != nil {
		return nil, err
	}
	if cur, ok := e.toolboxes[t.agent.Address]; ok && cur.box == t.box {
		e.toolboxes[t.agent.Address] = fresh
	}
	return fresh, nil
}

// Pinned starts every MCP server of the plan and resolves every command
// tool's executable, and returns what they are now, as `symbi lock` writes
// them to the lock file, with a warning for each launch that fetches a
// package without an exact version. Nothing is checked against the plan's
// lock. The servers are stopped before it returns.
func (e *Engine) Pinned(ctx context.Context) (*plan.Lock, []string, error) {
	e.registerSecrets()
	var tools []plan.Tool
	for _, t := range e.plan.Tools {
		if t.Executor.Kind == "command" {
			tools = append(tools, t)
		}
	}
	box, err := builtins.NewToolbox(ctx, tools, e.plan.MCPServers, builtins.Options{
		BaseDir:         e.opts.BaseDir,
		StateDir:        e.opts.StateDir,
		Workspace:       e.workspace(),
		Resolve:         e.resolve,
		ResolveURL:      e.resolveURL,
		Redact:          e.secrets.JSON,
		Reserved:        e.planToolNames(),
		ExecutableCache: filepath.Join(e.opts.StateDir, "executables.json"),
	})
	if err != nil {
		return nil, nil, e.secrets.Err(err)
	}
	defer box.Close()
	l, warnings, err := box.Pinned()
	if err != nil {
		return nil, nil, e.secrets.Err(err)
	}
	return l, warnings, nil
}
