package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/lockfile"
	"github.com/symbi-dev/symbi/plan"
)

// ErrDrift is the cause of a run refused because a server or tool differs
// from the lock file (on_drift = "refuse"); test with errors.Is.
var ErrDrift = errors.New("tools differ from the lock file")

// DriftError lists every drift that on_drift = "refuse" refused, as a
// readable diff.
type DriftError struct {
	LockFile string
	Changes  []lockfile.Change
}

func (e *DriftError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the tools differ from %s, and on_drift = \"refuse\" does not run them:\n", orLockFile(e.LockFile))
	for _, c := range e.Changes {
		b.WriteString("  " + strings.ReplaceAll(c.String(), "\n", "\n  ") + "\n")
	}
	b.WriteString("Review the change; if it is expected, pin it with `symbi lock -update` (or set on_drift to hide_tool or warn).")
	return b.String()
}

func (e *DriftError) Is(target error) bool { return target == ErrDrift }

func orLockFile(f string) string {
	if f == "" {
		return "the lock file"
	}
	return f
}

// What a run did about a drift (Drift.Action).
const (
	DriftRefused = "refused"
	DriftHidden  = "hidden"
	DriftWarned  = "warned"
)

// Drift is one drift the toolbox found and what it did about it.
type Drift struct {
	Change lockfile.Change
	Action string // refused | hidden | warned
	// ListChanged: found when a server said its tools changed mid-run
	// (notifications/tools/list_changed), not when the servers started.
	ListChanged bool
}

// describe is what the server is now, as the lock file would pin it: its
// launch, who answered, and every tool's canonical definition.
func (s *mcpSession) describe(tb *Toolbox) (plan.LockedServer, []string, error) {
	now := plan.LockedServer{Name: s.name}
	var warnings []string
	for _, a := range s.srv.Command {
		now.Command = append(now.Command, written(a))
	}
	if !s.srv.URL.IsZero() {
		now.URL = written(s.srv.URL)
	}
	if s.argv != nil {
		exe, err := lockfile.Executable(s.argv[0], s.dir, tb.opts.BaseDir)
		if err != nil {
			return now, nil, fmt.Errorf("%s: resolving %q: %w", s.address, s.argv[0], err)
		}
		digest, err := tb.hasher.Digest(lockfile.AbsExecutable(exe, tb.opts.BaseDir))
		if err != nil {
			return now, nil, fmt.Errorf("%s: %w", s.address, err)
		}
		now.Executable, now.SHA256 = exe, digest
		if p, ok := lockfile.LauncherPackage(s.argv); ok {
			now.Launcher, now.Package, now.Version = p.Launcher, p.Name, p.Version
			if !p.Pinned {
				reported := ""
				if r := s.session.InitializeResult(); r != nil && r.ServerInfo != nil {
					reported = r.ServerInfo.Version
				}
				warnings = append(warnings, fmt.Sprintf("%s: %s", s.address, lockfile.UnpinnedWarning(p, reported)))
			}
		}
	}
	if r := s.session.InitializeResult(); r != nil {
		now.ProtocolVersion = r.ProtocolVersion
		if r.ServerInfo != nil {
			now.ServerName, now.ServerVersion = r.ServerInfo.Name, r.ServerInfo.Version
		}
	}
	for _, t := range s.tools {
		def, err := definitionOf(t)
		if err != nil {
			return now, nil, fmt.Errorf("%s: %w", s.address, err)
		}
		now.Tools = append(now.Tools, plan.LockedTool{Name: t.Name, Digest: lockfile.Digest(def), Definition: def})
	}
	return now, warnings, nil
}

// definitionOf is a server tool's canonical definition (lockfile.Definition).
func definitionOf(t *mcp.Tool) (json.RawMessage, error) {
	lt := lockfile.Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if lt.InputSchema, err = json.Marshal(t.InputSchema); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
	}
	if t.OutputSchema != nil {
		if lt.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
		}
	}
	if a := t.Annotations; a != nil {
		lt.Annotations = &lockfile.Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return lockfile.Definition(lt)
}

// written is a plan string as the configuration writes it: its value, or
// an env() call's source, never the value it reads (a lock file is
// committed).
func written(s plan.String) string {
	if s.Deferred != nil {
		return "${" + s.Deferred.Source + "}"
	}
	return s.Value
}

// describeCommand is a command tool as the lock file pins it: its
// executable and that file's digest.
func (tb *Toolbox) describeCommand(t plan.Tool) (plan.LockedTool, error) {
	c := t.Executor.Command
	argv, err := tb.argv(c.Argv[:1])
	if err != nil {
		return plan.LockedTool{}, err
	}
	dir := tb.opts.BaseDir
	if c.Dir != "" {
		dir = tb.commandDir(c.Dir, []string{"x"})
	}
	exe, err := lockfile.Executable(argv[0], dir, tb.opts.BaseDir)
	if err != nil {
		return plan.LockedTool{}, fmt.Errorf("resolving %q: %w", argv[0], err)
	}
	digest, err := tb.hasher.Digest(lockfile.AbsExecutable(exe, tb.opts.BaseDir))
	if err != nil {
		return plan.LockedTool{}, err
	}
	return plan.LockedTool{Name: t.Address, Executable: exe, SHA256: digest}, nil
}

// onDrift is the on_drift of a server (its block's, else the toolbox's).
func (tb *Toolbox) onDrift(s plan.MCPServer) string {
	if s.OnDrift != "" {
		return s.OnDrift
	}
	return tb.commandOnDrift()
}

func (tb *Toolbox) commandOnDrift() string {
	if tb.opts.OnDrift != "" {
		return tb.opts.OnDrift
	}
	return plan.DefaultOnDrift
}

// Pinned is what the toolbox's servers and command tools are now, as
// `symbi lock` writes them, and a warning for each launch that fetches a
// package without an exact version.
func (tb *Toolbox) Pinned() (*plan.Lock, []string, error) {
	l := &plan.Lock{}
	var warnings []string
	for _, s := range tb.sessions {
		now, w, err := s.describe(tb)
		if err != nil {
			return nil, nil, err
		}
		l.Servers = append(l.Servers, now)
		warnings = append(warnings, w...)
	}
	for _, t := range tb.commandTools {
		now, err := tb.describeCommand(t)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", t.Address, err)
		}
		l.CommandTools = append(l.CommandTools, now)
	}
	return l, warnings, nil
}

// Drifts are the drifts the toolbox found when it started and since, and
// what it did about each (refused drifts end in an error instead).
func (tb *Toolbox) Drifts() []Drift {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	return append([]Drift(nil), tb.drifts...)
}

// checkServer compares a connected server with the lock and settles its
// drift: the tools to hide, the drifts to report, the changes to refuse.
func (tb *Toolbox) checkServer(s *mcpSession, listChanged bool) (hidden map[string]bool, drifts []Drift, refused []lockfile.Change, err error) {
	now, _, err := s.describe(tb)
	if err != nil {
		return nil, nil, nil, err
	}
	action := tb.onDrift(s.srv)
	hidden = map[string]bool{}
	for _, c := range lockfile.Compare(tb.opts.Lock.Server(s.name), now) {
		if !c.Drift() {
			continue
		}
		switch action {
		case plan.OnDriftRefuse:
			refused = append(refused, c)
			drifts = append(drifts, Drift{Change: c, Action: DriftRefused, ListChanged: listChanged})
			continue
		case plan.OnDriftHideTool:
			if c.Tool != "" {
				hidden[c.Tool] = true
			} else {
				// A launch that resolves differently, or a server the
				// lock does not know: none of its tools is what was
				// reviewed.
				for _, t := range s.tools {
					hidden[t.Name] = true
				}
			}
			drifts = append(drifts, Drift{Change: c, Action: DriftHidden, ListChanged: listChanged})
		default:
			drifts = append(drifts, Drift{Change: c, Action: DriftWarned, ListChanged: listChanged})
		}
	}
	return hidden, drifts, refused, nil
}

// checkCommand compares a command tool with the lock; hide reports that
// on_drift = "hide_tool" leaves it out.
func (tb *Toolbox) checkCommand(t plan.Tool) (hide bool, drifts []Drift, refused []lockfile.Change, err error) {
	now, err := tb.describeCommand(t)
	if err != nil {
		return false, nil, nil, fmt.Errorf("%s: %w", t.Address, err)
	}
	for _, c := range lockfile.CompareCommand(tb.opts.Lock.CommandTool(t.Address), now) {
		switch tb.commandOnDrift() {
		case plan.OnDriftRefuse:
			refused = append(refused, c)
			drifts = append(drifts, Drift{Change: c, Action: DriftRefused})
		case plan.OnDriftHideTool:
			hide = true
			drifts = append(drifts, Drift{Change: c, Action: DriftHidden})
		default:
			drifts = append(drifts, Drift{Change: c, Action: DriftWarned})
		}
	}
	return hide, drifts, refused, nil
}

// ListChanged reports whether a server has said its tools changed
// (notifications/tools/list_changed) since the toolbox last checked: call
// Refresh before the model is offered the tools again.
func (tb *Toolbox) ListChanged() bool {
	for _, s := range tb.sessions {
		if s.listChanged.Load() {
			return true
		}
	}
	return false
}

// Refresh lists again the tools of every server that said they changed,
// checks them against the lock as at the start (a tool whose definition
// differs from its pinned one, or that is new, is drift) and only then
// puts the new list in the toolbox. It returns the drifts found; on_drift
// = "refuse" makes it an error wrapping ErrDrift, and the old tools stay.
// Without a lock file a list_changed is not acted on: the toolbox keeps
// the tools it started with.
func (tb *Toolbox) Refresh(ctx context.Context) ([]Drift, error) {
	tb.refreshMu.Lock()
	defer tb.refreshMu.Unlock()
	var all []Drift
	var refused []lockfile.Change
	for _, s := range tb.sessions {
		if !s.listChanged.Swap(false) || tb.opts.Lock == nil {
			continue
		}
		tools, err := s.list(ctx)
		if err != nil {
			s.listChanged.Store(true) // still unchecked: calls of its tools stay refused
			return all, fail(Transport, s.address, fmt.Errorf("listing tools again after list_changed: %w", err))
		}
		old := s.tools
		s.tools = tools
		hidden, drifts, ref, err := tb.checkServer(s, true)
		if err != nil || len(ref) > 0 {
			s.tools = old
			s.listChanged.Store(true)
			if err != nil {
				return all, err
			}
			refused = append(refused, ref...)
			all = append(all, drifts...)
			continue
		}
		if err := tb.replaceServerTools(s, hidden); err != nil {
			s.tools = old
			s.listChanged.Store(true)
			return all, err
		}
		all = append(all, drifts...)
	}
	tb.toolsMu.Lock()
	tb.drifts = append(tb.drifts, all...)
	tb.toolsMu.Unlock()
	if len(refused) > 0 {
		return all, &DriftError{LockFile: tb.opts.Lock.File, Changes: refused}
	}
	return all, nil
}

// replaceServerTools puts a server's listed tools in place of the ones it
// had, under the names NewToolbox would give them, without the hidden
// ones; tool blocks that wrap one of its tools keep their entry.
func (tb *Toolbox) replaceServerTools(s *mcpSession, hidden map[string]bool) error {
	ents, err := s.entries(tb.opts.Now)
	if err != nil {
		return err
	}
	tb.toolsMu.Lock()
	defer tb.toolsMu.Unlock()
	// The server's withheld tools are those of its new list.
	tb.withheld = slices.DeleteFunc(tb.withheld, func(w Withheld) bool { return w.Source == s.address })
	tb.withheld = append(tb.withheld, s.withheld...)
	var order []string
	for _, n := range tb.order {
		if e := tb.tools[n]; e.server == s && !e.wrapped {
			delete(tb.tools, n)
			continue
		}
		order = append(order, n)
	}
	tb.order = order
	s.hidden = hidden
	for _, e := range ents {
		if hidden[e.info.Name] {
			continue
		}
		own := e.info.Name
		if tb.nameTakenLocked(own) {
			e.info.Name = s.name + "__" + own
		}
		if tb.nameTakenLocked(e.info.Name) {
			return fmt.Errorf("%s: tool %q cannot join: %q is reserved or taken, and so is %q", s.address, own, own, e.info.Name)
		}
		tb.tools[e.info.Name] = e
		tb.order = append(tb.order, e.info.Name)
	}
	tb.generation++
	return nil
}

// Generation counts the changes of the toolbox's tools (a Refresh that
// took a new list): a caller that keeps a copy of Tools can tell when it
// is stale.
func (tb *Toolbox) Generation() uint64 {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	return tb.generation
}
