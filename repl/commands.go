package repl

import (
	"context"
	"fmt"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
)

// argKind is what a command's first argument names, for completion.
type argKind int

const (
	argNone argKind = iota
	argPath
	argAddress // any block address
	argAgent
	argRunnable // an agent or a best_of_n
	argPolicy
	argTool
	argRun
	argDoc // a function or an address
	argCommand
)

type command struct {
	name        string
	usage       string // the arguments, as :help shows them
	help        string
	needsConfig bool
	arg         argKind
	run         func(s *Session, ctx context.Context, c call) (string, hcl.Diagnostics)
}

// commandTable lists the commands in the order :help shows them. It is a
// function, not a variable, because :help reads it.
func commandTable() []command {
	return []command{
		{name: ":help", usage: "[COMMAND]", help: "list the commands, or explain one", arg: argCommand, run: (*Session).help},
		{name: ":load", usage: "PATH", help: "load the configuration in a .hcl file or a directory", arg: argPath, run: (*Session).loadCmd},
		{name: ":reload", help: "load the last configuration again, after editing it", run: (*Session).reload},
		{name: ":plan", usage: "[ADDR]", help: "the execution plan as a tree, or one block of it (agent.x, tool.y, var.z, settings)", needsConfig: true, arg: argAddress, run: (*Session).plan},
		{name: ":tools", usage: "ADDR", help: "an agent's effective tools after its tool_profile, and its MCP servers", needsConfig: true, arg: argAgent, run: (*Session).tools},
		{name: ":gate", usage: "POLICY ACTION_EXPR", help: "one policy's decision on an action object, e.g. {type = \"tool_call\", tool = \"shell\", arguments = {cmd = \"sudo ls\"}}", needsConfig: true, arg: argPolicy, run: (*Session).gate},
		{name: ":call", usage: "TOOL [ARGS_EXPR]", help: "validate, gate through the policies of the agents that use the tool, and run it", needsConfig: true, arg: argTool, run: (*Session).callTool},
		{name: ":run", usage: "ADDR [INPUT]", help: "run an agent (or a best_of_n) on INPUT (var.input when left out) and print the answer and a summary", needsConfig: true, arg: argRunnable, run: (*Session).runAgent},
		{name: ":step", usage: "ADDR [INPUT]", help: "run an agent one phase per Enter: proposed actions, decisions, observations", needsConfig: true, arg: argAgent, run: (*Session).stepAgent},
		{name: ":continue", help: "finish the run :step is walking through without stopping", run: (*Session).continueStep},
		{name: ":abort", help: "cancel the run :step is walking through", run: (*Session).abortStep},
		{name: ":journal", usage: "[RUN]", help: "the timeline of the latest run, or of the run with that id", needsConfig: true, arg: argRun, run: (*Session).journal},
		{name: ":funcs", help: "every function with its signature", run: (*Session).funcs},
		{name: ":doc", usage: "NAME", help: "a function's signature and description, or a block's description", arg: argDoc, run: (*Session).doc},
		{name: ":quit", help: "end the session (also Ctrl-D)"},
	}
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commandTable() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	var names []string
	for _, c := range commandTable() {
		names = append(names, c.name)
	}
	return names
}

// suggest returns " Did you mean X?" for the closest candidate, or "".
func suggest(given string, candidates []string) string {
	// A suggestion helps only when the name is mostly right.
	best, bestDist := "", min(3, len(given)/3+1)
	for _, c := range candidates {
		if d := levenshtein.Distance(given, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %s?", best)
}

func (s *Session) help(_ context.Context, c call) (string, hcl.Diagnostics) {
	if c.args != "" {
		name := c.args
		if !strings.HasPrefix(name, ":") {
			name = ":" + name
		}
		cmd, ok := lookupCommand(name)
		if !ok {
			return "", errorAt(c.argsRange(), "Unknown command", "There is no command %s.%s", name, suggest(name, commandNames()))
		}
		return strings.TrimSpace(cmd.name+" "+cmd.usage) + "\n  " + cmd.help + "\n", nil
	}
	var b strings.Builder
	b.WriteString("Type an expression to evaluate it in the configuration's scope:\n")
	b.WriteString("  var.x, local.y, agent.NAME.loop.mode, budget.NAME.max_iterations, upper(\"a\")\n")
	b.WriteString("Brackets left open continue the input on the next line. Commands:\n")
	w := newTable(&b)
	for _, cmd := range commandTable() {
		fmt.Fprintf(w, "  %s\t%s\n", strings.TrimSpace(cmd.name+" "+cmd.usage), cmd.help)
	}
	w.Flush()
	return b.String(), nil
}

func (s *Session) loadCmd(ctx context.Context, c call) (string, hcl.Diagnostics) {
	if c.args == "" {
		return "", errorAt(c.nameRng, "Missing path", ":load needs the path of a .hcl file or of a directory of them.")
	}
	path := c.args
	if uq, ok := unquote(path); ok {
		path = uq
	}
	diags := s.load(ctx, path)
	if diags.HasErrors() {
		return s.loadFailed(), diags
	}
	return s.Summary(), diags
}

func (s *Session) reload(ctx context.Context, c call) (string, hcl.Diagnostics) {
	if s.path == "" {
		return "", errorAt(c.nameRng, "Nothing to reload", "No configuration was loaded yet; use :load PATH.")
	}
	diags := s.load(ctx, s.path)
	if diags.HasErrors() {
		return s.loadFailed(), diags
	}
	return s.Summary(), diags
}

func (s *Session) loadFailed() string {
	if s.cfg != nil {
		return fmt.Sprintf("%s did not load; the session keeps the configuration it had (%s).\n", s.path, s.from)
	}
	return fmt.Sprintf("%s did not load.\n", s.path)
}

// Summary says what the loaded configuration holds: "Loaded PATH: 1
// agent, 1 model, 1 tool, 1 policy."
func (s *Session) Summary() string {
	if s.cfg == nil {
		return "No configuration loaded.\n"
	}
	p := s.cfg.Plan
	var parts []string
	count := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	count(len(p.Agents), "agent", "agents")
	count(len(p.Models), "model", "models")
	count(len(p.Tools), "tool", "tools")
	count(len(p.MCPServers), "MCP server", "MCP servers")
	count(len(p.Policies), "policy", "policies")
	count(len(p.BestOfN), "best_of_n", "best_of_n blocks")
	if len(parts) == 0 {
		parts = append(parts, "no blocks")
	}
	return fmt.Sprintf("Loaded %s: %s.\n", s.from, strings.Join(parts, ", "))
}

// unquote reads a double-quoted argument.
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	return strings.ReplaceAll(s[1:len(s)-1], `\"`, `"`), true
}
