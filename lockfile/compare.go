package lockfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/symbi-dev/symbi/plan"
)

// Kind is what differs between a lock and what runs.
type Kind string

const (
	// Drift, which a run refuses by default (on_drift):
	ToolChanged     Kind = "tool_changed"     // a tool's definition differs from its pinned one
	ToolAdded       Kind = "tool_added"       // a tool the lock does not pin
	LaunchChanged   Kind = "launch_changed"   // the server's command, executable or its digest differs
	ServerUnpinned  Kind = "server_unpinned"  // a server the lock does not pin: all its tools are new
	CommandChanged  Kind = "command_changed"  // a command tool's executable or its digest differs
	CommandUnpinned Kind = "command_unpinned" // a command tool the lock does not pin

	// Not drift, but the lock is out of date (lock -check reports them):
	ToolRemoved   Kind = "tool_removed"   // a pinned tool the server no longer offers
	ServerChanged Kind = "server_changed" // the protocol version or the server's name or version differs
	Unused        Kind = "unused"         // a pinned server or command tool the configuration no longer has
)

// Change is one difference between a lock and what runs, with what a
// person needs to judge it.
type Change struct {
	Kind   Kind
	Server string // the mcp_server's name; "" for a command tool
	Tool   string // the tool's name (a command tool's address); "" for the server itself
	// Details are the lines of the diff: the description's lines removed
	// and added, the schema paths that changed, the annotations.
	Details []string
}

// Drift reports whether the change is one a run acts on (refuses, hides or
// warns of): a tool whose definition changed, a tool or server that is
// not pinned, a launch that resolves differently. A tool that went away
// or a new server version is not: nothing unreviewed reaches the model.
func (c Change) Drift() bool {
	switch c.Kind {
	case ToolChanged, ToolAdded, LaunchChanged, ServerUnpinned, CommandChanged, CommandUnpinned:
		return true
	}
	return false
}

// Subject names what changed: "mcp_server.fs tool \"read\"", "tool.search".
func (c Change) Subject() string {
	switch {
	case c.Server == "":
		return c.Tool
	case c.Tool == "":
		return "mcp_server." + c.Server
	}
	return fmt.Sprintf("mcp_server.%s tool %q", c.Server, c.Tool)
}

// Summary is the change's first line.
func (c Change) Summary() string {
	what := map[Kind]string{
		ToolChanged:     "changed since it was pinned",
		ToolAdded:       "appeared: the lock file does not pin it",
		LaunchChanged:   "is launched differently than pinned",
		ServerUnpinned:  "is not in the lock file",
		CommandChanged:  "runs a different executable than pinned",
		CommandUnpinned: "is not in the lock file",
		ToolRemoved:     "is pinned but no longer offered",
		ServerChanged:   "reports another version than pinned",
		Unused:          "is pinned but no longer configured",
	}[c.Kind]
	return escapeLine(c.Subject() + " " + what)
}

// String is the change as a readable diff: the summary, then each detail
// indented below it.
func (c Change) String() string {
	var b strings.Builder
	b.WriteString(c.Summary())
	for _, d := range c.Details {
		b.WriteString("\n    " + d)
	}
	return b.String()
}

// Compare lists how the server now differs from its pinned entry, locked
// (nil: the lock does not pin it). now describes the running server as
// `symbi lock` would write it. Changes come in a stable order: the launch,
// then tools by name.
func Compare(locked *plan.LockedServer, now plan.LockedServer) []Change {
	if locked == nil {
		c := Change{Kind: ServerUnpinned, Server: now.Name}
		for _, t := range now.Tools {
			c.Details = append(c.Details, fmt.Sprintf("tool %q", escapeLine(t.Name)))
		}
		return []Change{c}
	}
	var out []Change
	if d := launchDetails(*locked, now); len(d) > 0 {
		out = append(out, Change{Kind: LaunchChanged, Server: now.Name, Details: d})
	}
	if d := infoDetails(*locked, now); len(d) > 0 {
		out = append(out, Change{Kind: ServerChanged, Server: now.Name, Details: d})
	}
	var names []string
	for _, t := range now.Tools {
		names = append(names, t.Name)
	}
	for _, t := range locked.Tools {
		if now.Tool(t.Name) == nil {
			names = append(names, t.Name)
		}
	}
	sort.Strings(names)
	for _, n := range slices.Compact(names) {
		was, is := locked.Tool(n), now.Tool(n)
		switch {
		case was == nil:
			c := Change{Kind: ToolAdded, Server: now.Name, Tool: n}
			c.Details = append(c.Details, "digest "+is.Digest)
			c.Details = append(c.Details, definitionLines(is.Definition)...)
			out = append(out, c)
		case is == nil:
			out = append(out, Change{Kind: ToolRemoved, Server: now.Name, Tool: n})
		case was.Digest != is.Digest:
			c := Change{Kind: ToolChanged, Server: now.Name, Tool: n, Details: []string{"digest " + was.Digest + " → " + is.Digest}}
			c.Details = append(c.Details, DefinitionDiff(was.Definition, is.Definition)...)
			out = append(out, c)
		}
	}
	return out
}

// CompareCommand is Compare for a command tool: its executable and that
// file's digest.
func CompareCommand(locked *plan.LockedTool, now plan.LockedTool) []Change {
	if locked == nil {
		return []Change{{Kind: CommandUnpinned, Tool: now.Name, Details: []string{"executable " + escapeLine(now.Executable) + " " + now.SHA256}}}
	}
	var d []string
	if locked.Executable != now.Executable {
		d = append(d, "executable "+escapeLine(locked.Executable)+" → "+escapeLine(now.Executable))
	}
	if locked.SHA256 != now.SHA256 {
		d = append(d, "sha256 "+locked.SHA256+" → "+now.SHA256)
	}
	if len(d) == 0 {
		return nil
	}
	return []Change{{Kind: CommandChanged, Tool: now.Name, Details: d}}
}

func launchDetails(was, is plan.LockedServer) []string {
	var d []string
	if !slices.Equal(was.Command, is.Command) {
		d = append(d, "command "+argvText(was.Command)+" → "+argvText(is.Command))
	}
	for _, f := range []struct{ name, was, is string }{
		{"url", was.URL, is.URL},
		{"executable", was.Executable, is.Executable},
		{"package", was.Package, is.Package},
		{"version", was.Version, is.Version},
	} {
		if f.was != f.is {
			d = append(d, fmt.Sprintf("%s %s → %s", f.name, orNone(f.was), orNone(f.is)))
		}
	}
	if was.SHA256 != is.SHA256 {
		d = append(d, fmt.Sprintf("sha256 %s → %s", was.SHA256, is.SHA256))
	}
	return d
}

func infoDetails(was, is plan.LockedServer) []string {
	var d []string
	for _, f := range []struct{ name, was, is string }{
		{"protocol_version", was.ProtocolVersion, is.ProtocolVersion},
		{"server_name", was.ServerName, is.ServerName},
		{"server_version", was.ServerVersion, is.ServerVersion},
	} {
		if f.was != f.is {
			d = append(d, fmt.Sprintf("%s %s → %s", f.name, orNone(f.was), orNone(f.is)))
		}
	}
	return d
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return escapeLine(fmt.Sprintf("%q", s))
}

func argvText(argv []string) string {
	b, _ := json.Marshal(argv)
	return escapeLine(string(b))
}

// definitionLines is a new tool's definition, a line each, for its change.
func definitionLines(def json.RawMessage) []string {
	if len(def) == 0 {
		return nil
	}
	lines := strings.Split(Readable(def), "\n")
	for i, l := range lines {
		if r := []rune(l); len(r) > maxLineRunes {
			lines[i] = string(r[:maxLineRunes]) + fmt.Sprintf("… (%d chars)", len(r))
		}
	}
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines], fmt.Sprintf("… %d more lines", len(lines)-maxDiffLines))
	}
	return lines
}

// maxPaths bounds how many changed schema paths a diff lists.
const maxPaths = 20

// DefinitionDiff is what changed between two tool definitions, a line
// each: the title; the description as a text diff ("- " and "+ " lines,
// unchanged lines as "  "); the JSON paths of each schema that were added,
// removed or changed; each annotation. Text from the server is escaped, so
// an invisible character shows.
func DefinitionDiff(was, is json.RawMessage) []string {
	var a, b map[string]any
	if v, err := decode(was); err == nil {
		a, _ = v.(map[string]any)
	}
	if v, err := decode(is); err == nil {
		b, _ = v.(map[string]any)
	}
	var out []string
	if ta, tb := str(a["title"]), str(b["title"]); ta != tb {
		out = append(out, fmt.Sprintf("title %s → %s", orNone(ta), orNone(tb)))
	}
	if da, db := str(a["description"]), str(b["description"]); da != db {
		out = append(out, "description:")
		for _, l := range TextDiff(da, db) {
			out = append(out, "  "+l)
		}
	}
	for _, key := range []string{"inputSchema", "outputSchema"} {
		var paths []string
		jsonPaths(&paths, "", a[key], b[key])
		if len(paths) > maxPaths {
			paths = append(paths[:maxPaths], fmt.Sprintf("and %d more", len(paths)-maxPaths))
		}
		for _, p := range paths {
			out = append(out, strings.TrimSpace(key+" "+p))
		}
	}
	var paths []string
	jsonPaths(&paths, "", a["annotations"], b["annotations"])
	for _, p := range paths {
		out = append(out, strings.TrimSpace("annotations "+p))
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// jsonPaths appends the JSON Pointer of every place where a and b differ,
// with what happened there: "/properties/cmd added", "/required changed
// ["a"] → ["a","b"]".
func jsonPaths(out *[]string, at string, a, b any) {
	ma, aIsObj := a.(map[string]any)
	mb, bIsObj := b.(map[string]any)
	switch {
	case a == nil && b != nil:
		*out = append(*out, strings.TrimSpace(pointer(at)+" added: "+short(b)))
		return
	case a != nil && b == nil:
		*out = append(*out, strings.TrimSpace(pointer(at)+" removed"))
		return
	case aIsObj && bIsObj:
		keys := make([]string, 0, len(ma)+len(mb))
		for k := range ma {
			keys = append(keys, k)
		}
		for k := range mb {
			if _, ok := ma[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			jsonPaths(out, at+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), ma[k], mb[k])
		}
		return
	}
	ja, _ := marshal(a)
	jb, _ := marshal(b)
	if !bytes.Equal(ja, jb) {
		*out = append(*out, strings.TrimSpace(pointer(at)+" changed: "+short(a)+" → "+short(b)))
	}
}

// pointer is a JSON Pointer for a diff line; the whole value has none.
func pointer(at string) string { return escapeLine(at) }

// short is a JSON value on one line, cut in the middle past 60 characters.
func short(v any) string {
	b, _ := marshal(v)
	s := escapeLine(string(b))
	if r := []rune(s); len(r) > 60 {
		s = string(r[:40]) + "…" + string(r[len(r)-15:]) + fmt.Sprintf(" (%d chars)", len(r))
	}
	return s
}

// Bounds of a text diff: a server's description can be any size, and a
// report must stay readable and cheap.
const (
	maxDiffLines = 60  // lines of one text diff, before "… N more"
	maxLineRunes = 300 // runes of one line, before it is cut
	maxLCSCells  = 1e6 // above this many line pairs, no alignment is sought
)

// TextDiff is a line diff of two texts: "  " before a line both have, "- "
// before one only a has, "+ " before one only b has, escaped. At most
// maxDiffLines lines, each cut past maxLineRunes; texts too long to align
// are shown as all of a removed and all of b added.
func TextDiff(a, b string) []string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if a == "" {
		la = nil
	}
	if b == "" {
		lb = nil
	}
	out := textDiff(la, lb)
	if len(out) > maxDiffLines {
		out = append(out[:maxDiffLines], fmt.Sprintf("… %d more lines", len(out)-maxDiffLines))
	}
	return out
}

func textDiff(la, lb []string) []string {
	if float64(len(la))*float64(len(lb)) > maxLCSCells {
		var out []string
		for _, l := range la {
			out = append(out, "- "+cutLine(l))
		}
		for _, l := range lb {
			out = append(out, "+ "+cutLine(l))
		}
		return out
	}
	// The longest common subsequence, by dynamic programming over lines.
	n, m := len(la), len(lb)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if la[i] == lb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && la[i] == lb[j]:
			out = append(out, "  "+cutLine(la[i]))
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, "- "+cutLine(la[i]))
			i++
		default:
			out = append(out, "+ "+cutLine(lb[j]))
			j++
		}
	}
	return out
}

// cutLine is one line of text escaped, cut past maxLineRunes with its
// length.
func cutLine(s string) string {
	r := []rune(escapeLine(s))
	if len(r) <= maxLineRunes {
		return string(r)
	}
	return string(r[:maxLineRunes]) + fmt.Sprintf("… (%d chars)", len(r))
}

// Report is changes as a readable diff, one change after another.
func Report(changes []Change) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Diff is every change from the lock old (nil: no lock file) to now, what
// the configuration's servers and command tools are: per server and
// command tool of now, Compare and CompareCommand; then each server and
// command tool old pins that now does not have, as Unused.
func Diff(old, now *plan.Lock) []Change {
	var out []Change
	for _, s := range now.Servers {
		out = append(out, Compare(old.Server(s.Name), s)...)
	}
	for _, t := range now.CommandTools {
		out = append(out, CompareCommand(old.CommandTool(t.Name), t)...)
	}
	if old == nil {
		return out
	}
	for _, s := range old.Servers {
		if now.Server(s.Name) == nil {
			out = append(out, Change{Kind: Unused, Server: s.Name})
		}
	}
	for _, t := range old.CommandTools {
		if now.CommandTool(t.Name) == nil {
			out = append(out, Change{Kind: Unused, Tool: t.Name})
		}
	}
	return out
}
