package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// plan prints the plan tree, or the entry of one block.
func (s *Session) plan(_ context.Context, c call) (string, hcl.Diagnostics) {
	var buf bytes.Buffer
	if err := plan.WriteTree(&buf, s.cfg.Plan); err != nil {
		return "", errorAt(c.nameRng, "Cannot print the plan", "%v", err)
	}
	if c.args == "" {
		return buf.String(), nil
	}
	addr, rng, _, _ := c.word()
	entries := treeEntries(buf.String())
	if e, ok := entries[addr]; ok {
		return e, nil
	}
	return "", errorAt(rng, "No such block", "The plan has no block %s.%s", addr, suggest(addr, sortedKeys(entries)))
}

// treeEntries splits plan.WriteTree's output into its entries by title
// ("agent.x", "var.y", "settings", "files"). An entry starts with its title
// line at the left margin and ends with the first "}" there.
func treeEntries(tree string) map[string]string {
	out := map[string]string{}
	lines := strings.SplitAfter(tree, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" || l[0] == ' ' || l[0] == '#' || l[0] == '}' || l[0] == '\n' {
			continue
		}
		title, _, ok := strings.Cut(l, " {")
		if !ok {
			continue
		}
		var b strings.Builder
		for ; i < len(lines); i++ {
			b.WriteString(lines[i])
			if strings.TrimRight(lines[i], "\n") == "}" {
				break
			}
		}
		out[title] = b.String()
	}
	return out
}

// agentAt resolves an agent named by its address or its bare name.
func (s *Session) agentAt(name string, rng hcl.Range) (*plan.Agent, hcl.Diagnostics) {
	p := s.cfg.Plan
	var names []string
	for _, a := range p.Agents {
		names = append(names, a.Address)
	}
	if name == "" {
		switch len(p.Agents) {
		case 0:
			return nil, errorAt(rng, "No agent", "The configuration has no agent.")
		case 1:
			return &p.Agents[0], nil
		}
		return nil, errorAt(rng, "Which agent?", "The configuration has %d agents: %s.", len(names), strings.Join(names, ", "))
	}
	addr := name
	if !strings.HasPrefix(addr, "agent.") {
		addr = "agent." + addr
	}
	if a := p.Agent(addr); a != nil {
		return a, nil
	}
	return nil, errorAt(rng, "No such agent", "The configuration has no %s.%s", addr, suggest(addr, names))
}

// tools prints an agent's tools as its runs offer them: its configured
// tools after its tool_profile, then its MCP servers' tools, which the
// session's tool engine starts the servers for (once for the session), the
// profile applied as the engine applies it; the delegate tool when it has
// delegates; what the profile removed; and the servers' tools no run
// offers, with why. A server's names and descriptions are escaped.
func (s *Session) tools(ctx context.Context, c call) (string, hcl.Diagnostics) {
	name, rng, _, _ := c.word()
	if name == "" {
		rng = c.nameRng
	}
	ag, diags := s.agentAt(name, rng)
	if diags.HasErrors() {
		return "", diags
	}
	p := s.cfg.Plan
	eng, err := s.toolEngine()
	if err != nil {
		return "", errorAt(rng, "Tools did not start", "%v", err)
	}
	set, err := eng.ToolsOf(ctx, ag.Address)
	if err != nil {
		return "", errorAt(rng, "Tools did not start", "%v", err)
	}
	var prof *plan.ToolProfile
	if ag.ToolProfile != "" {
		prof = p.ToolProfile(ag.ToolProfile)
	}

	var b strings.Builder
	if prof != nil {
		fmt.Fprintf(&b, "%s, after %s%s:\n", ag.Address, prof.Address, profileSummary(prof))
	} else {
		fmt.Fprintf(&b, "%s (no tool_profile):\n", ag.Address)
	}
	if len(set.Tools) == 0 && len(ag.Delegates) == 0 {
		b.WriteString("  no tools\n")
	}
	w := newTable(&b)
	for _, t := range set.Tools {
		approval := t.Approval
		if approval == "" {
			approval = "policy" // a server's tool has no block to say otherwise
		}
		fmt.Fprintf(w, "  %s\t%s\teffect %s\tapproval %s\t%s\n", policy.EscapeLine(t.Name), t.Origin(), t.Effect, approval, policy.EscapeLine(firstSentence(t.Description)))
	}
	if len(ag.Delegates) > 0 {
		fmt.Fprintf(w, "  delegate\tengine\teffect none\t\thands a task to %s\n", strings.Join(ag.Delegates, ", "))
	}
	w.Flush()
	if len(set.Removed) > 0 {
		fmt.Fprintf(&b, "removed by the profile: %s\n", policy.EscapeLine(strings.Join(set.Removed, ", ")))
	}
	for _, x := range set.Withheld {
		fmt.Fprintf(&b, "not offered: %s\n", policy.EscapeLine(fmt.Sprintf("%s (%s): %s", x.Name, x.Source, x.Reason)))
	}
	return b.String(), nil
}

// planString shows a plan string as written: its value, or the source of
// the deferred expression (never evaluated here: it may read a secret).
func planString(s plan.String) string {
	if s.Deferred != nil {
		return s.Deferred.Source
	}
	return s.Value
}

func profileSummary(p *plan.ToolProfile) string {
	var parts []string
	if len(p.Include) > 0 {
		parts = append(parts, "include "+strings.Join(p.Include, " "))
	}
	if len(p.Exclude) > 0 {
		parts = append(parts, "exclude "+strings.Join(p.Exclude, " "))
	}
	if p.MaxTools > 0 {
		parts = append(parts, fmt.Sprintf("max_tools %d", p.MaxTools))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func executorSummary(e plan.Executor) string {
	switch e.Kind {
	case "builtin":
		return "builtin " + e.Builtin
	case "mcp":
		if e.MCP != nil {
			return "mcp " + e.MCP.Server
		}
	}
	return e.Kind
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstSentence keeps a one-line table readable.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return s
}

// funcs lists every function with its signature.
func (s *Session) funcs(_ context.Context, _ call) (string, hcl.Diagnostics) {
	var b strings.Builder
	w := newTable(&b)
	for _, f := range s.functions() {
		fmt.Fprintf(w, "%s\t%s\n", f.Signature(), firstSentence(f.Description))
	}
	w.Flush()
	return b.String(), nil
}

// doc describes a function, or a block by its address.
func (s *Session) doc(_ context.Context, c call) (string, hcl.Diagnostics) {
	name, rng, _, _ := c.word()
	if name == "" {
		return "", errorAt(c.nameRng, "Missing name", ":doc needs a function name (upper) or an address (agent.NAME, tool.NAME, var.NAME).")
	}
	name = strings.TrimSuffix(name, "()")
	var fnames []string
	for _, f := range s.functions() {
		if f.Name == name {
			return f.Signature() + "\n  " + strings.ReplaceAll(strings.TrimSpace(f.Description), "\n", "\n  ") + "\n", nil
		}
		fnames = append(fnames, f.Name)
	}
	if !strings.Contains(name, ".") {
		return "", errorAt(rng, "No such function", "There is no function %s.%s", name, suggest(name, fnames))
	}
	if s.cfg == nil {
		return "", hcl.Diagnostics{s.noConfig(c)}
	}
	p := s.cfg.Plan
	switch {
	case strings.HasPrefix(name, "var."):
		for _, v := range p.Variables {
			if "var."+v.Name == name {
				return describe(name, v.Description, fmt.Sprintf("type %s, declared at %s", v.Type, v.Range)), nil
			}
		}
	case p.Agent(name) != nil:
		a := p.Agent(name)
		return describe(name, a.Description, fmt.Sprintf("model %s, mode %s, declared at %s", a.Model, a.Loop.Mode, a.Range)), nil
	case p.Tool(name) != nil:
		t := p.Tool(name)
		extra := fmt.Sprintf("%s, effect %s, declared at %s", executorSummary(t.Executor), t.Effect, t.Range)
		params := t.Parameters
		if len(params) == 0 && t.Executor.Kind == "builtin" {
			info, _ := builtins.BuiltinInfo(t.Executor.Builtin)
			params = info.Parameters
		}
		if len(params) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, params) == nil {
				extra += "\nparameters: " + buf.String()
			}
		}
		return describe(name, t.Description, extra), nil
	}
	if _, ok := treeEntries(s.planTree())[name]; ok {
		return fmt.Sprintf("%s has no description; :plan %s shows its settings.\n", name, name), nil
	}
	return "", errorAt(rng, "No such block", "The configuration has no %s.%s", name, suggest(name, s.addresses()))
}

func describe(addr, description, extra string) string {
	if description == "" {
		description = "(no description)"
	}
	return fmt.Sprintf("%s\n  %s\n  %s\n", addr, description, strings.ReplaceAll(extra, "\n", "\n  "))
}

func (s *Session) planTree() string {
	var buf bytes.Buffer
	_ = plan.WriteTree(&buf, s.cfg.Plan)
	return buf.String()
}

// addresses lists every block address of the plan, and var.NAME for each
// variable, in the plan's order.
func (s *Session) addresses() []string {
	if s.cfg == nil {
		return nil
	}
	p := s.cfg.Plan
	var out []string
	for _, v := range p.Variables {
		out = append(out, "var."+v.Name)
	}
	add := func(addr string) { out = append(out, addr) }
	for _, x := range p.Models {
		add(x.Address)
	}
	for _, x := range p.Routers {
		add(x.Address)
	}
	for _, x := range p.Tools {
		add(x.Address)
	}
	for _, x := range p.MCPServers {
		add(x.Address)
	}
	for _, x := range p.ToolProfiles {
		add(x.Address)
	}
	for _, x := range p.Policies {
		add(x.Address)
	}
	for _, x := range p.PolicyTests {
		add(x.Address)
	}
	for _, x := range p.Budgets {
		add(x.Address)
	}
	for _, x := range p.Recoveries {
		add(x.Address)
	}
	for _, x := range p.Knowledge {
		add(x.Address)
	}
	for _, x := range p.Agents {
		add(x.Address)
	}
	for _, x := range p.BestOfN {
		add(x.Address)
	}
	return out
}

// journal prints a run's timeline from its journal file: the latest run's,
// or the one named (by its id or a unique prefix of it).
func (s *Session) journal(_ context.Context, c call) (string, hcl.Diagnostics) {
	sd := s.stateDir()
	runs, err := journal.ListRuns(sd)
	if err != nil {
		return "", errorAt(c.nameRng, "Cannot list runs", "%v", err)
	}
	if len(runs) == 0 {
		return fmt.Sprintf("No runs in %s yet; :run or :step an agent first.\n", sd), nil
	}
	run := runs[0]
	if c.args != "" {
		id, rng, _, _ := c.word()
		var found []journal.RunSummary
		for _, r := range runs {
			if r.ID == id {
				found = []journal.RunSummary{r}
				break
			}
			if strings.HasPrefix(r.ID, id) {
				found = append(found, r)
			}
		}
		switch len(found) {
		case 0:
			return "", errorAt(rng, "No such run", "There is no run %s in %s; :journal without an id shows the latest.", id, sd)
		case 1:
			run = found[0]
		default:
			return "", errorAt(rng, "Ambiguous run id", "%d runs start with %s; give more of the id.", len(found), id)
		}
	}
	evs, unsigned, err := journal.ReadToShow(sd, run.ID)
	if err != nil {
		return "", errorAt(c.nameRng, "Cannot read the journal", "%v", err)
	}
	if unsigned {
		return "warning: " + journal.ErrUnsigned.Error() + "\n" + render.Timeline(evs), nil
	}
	return render.Timeline(evs), nil
}
