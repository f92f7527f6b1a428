package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/lockfile"
	"github.com/symbi-dev/symbi/plan"
)

// ServerListing is what a connected MCP server offered a toolbox: its tools
// as its tools/list answered them, what it said of their execution, and
// what the lock check made of them. A durable runtime's worker, which may
// start processes, connects a plan's servers and lists them
// (Toolbox.Listings); its workflow, which may not, builds its toolbox from
// the listings (Options.ListServers) and sends every call to a worker
// (Options.Execute). A listing is plain JSON, kept in the workflow's
// history, so a replay builds the same toolbox.
type ServerListing struct {
	Server string `json:"server"` // the mcp_server address
	// Tools is the server's tool list ([]mcp.Tool as JSON).
	Tools json.RawMessage `json:"tools"`
	// TaskSupport is each tool's execution.taskSupport, by name.
	TaskSupport map[string]string `json:"task_support,omitempty"`
	// Hidden are the tools on_drift = "hide_tool" keeps out, and Drifts
	// what the worker's lock check found (refused drifts fail the listing
	// instead).
	Hidden []string `json:"hidden,omitempty"`
	Drifts []Drift  `json:"drifts,omitempty"`
}

// Listings lists every server the toolbox connected, in the order it
// connected them, with what its lock check found of each.
func (tb *Toolbox) Listings() ([]ServerListing, error) {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	out := make([]ServerListing, 0, len(tb.sessions))
	for _, s := range tb.sessions {
		tools, err := json.Marshal(s.tools)
		if err != nil {
			return nil, fmt.Errorf("%s: tools: %w", s.address, err)
		}
		l := ServerListing{Server: s.address, Tools: tools}
		s.exec.mu.Lock()
		if len(s.exec.taskSupport) > 0 {
			l.TaskSupport = maps.Clone(s.exec.taskSupport)
		}
		s.exec.mu.Unlock()
		for name, hidden := range s.hidden {
			if hidden {
				l.Hidden = append(l.Hidden, name)
			}
		}
		slices.Sort(l.Hidden)
		for _, d := range tb.drifts {
			if d.Change.Server == s.name {
				l.Drifts = append(l.Drifts, d)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// listedSession is a server known only by its listing: no process, no
// connection. Its tools' calls go through Options.Execute; the lock check
// is the listing's.
func listedSession(s plan.MCPServer, l ServerListing) (*mcpSession, error) {
	sess := &mcpSession{address: s.Address, name: strings.TrimPrefix(s.Address, "mcp_server."), srv: s, listed: true}
	sess.life, sess.end = context.WithCancel(context.Background())
	if err := json.Unmarshal(l.Tools, &sess.tools); err != nil {
		sess.end()
		return nil, fail(Transport, s.Address, fmt.Errorf("the listing of its tools does not decode: %w", err))
	}
	if slices.Contains(sess.tools, nil) {
		sess.end()
		return nil, fail(Transport, s.Address, errors.New("the listing of its tools holds a null tool"))
	}
	sess.exec.taskSupport = maps.Clone(l.TaskSupport)
	sess.hidden = map[string]bool{}
	for _, n := range l.Hidden {
		sess.hidden[n] = true
	}
	sess.drifts = l.Drifts
	return sess, nil
}

// listServers builds the sessions of servers from Options.ListServers.
func (tb *Toolbox) listServers(ctx context.Context, servers []plan.MCPServer) (map[string]*mcpSession, error) {
	ls, err := tb.opts.ListServers(ctx, servers)
	if err != nil {
		return nil, err
	}
	byAddr := map[string]ServerListing{}
	for _, l := range ls {
		byAddr[l.Server] = l
	}
	out := map[string]*mcpSession{}
	for _, s := range servers {
		l, ok := byAddr[s.Address]
		if !ok {
			return nil, fmt.Errorf("%s: the servers' listing does not hold it", s.Address)
		}
		sess, err := listedSession(s, l)
		if err != nil {
			return nil, err
		}
		out[s.Address] = sess
	}
	return out, nil
}

// definitionDigest is the digest of a server tool's canonical definition
// (lockfile.Definition), what an Execution names so that the worker runs
// the tool the run was offered; "" when it has none.
func definitionDigest(t *mcp.Tool) string {
	def, err := definitionOf(t)
	if err != nil {
		return ""
	}
	return lockfile.Digest(def)
}
