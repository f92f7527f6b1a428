package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/policy"
)

func newToolsCmd() *cobra.Command {
	var (
		agent   string
		asJSON  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "tools [PATH]",
		Short: "List every tool of a configuration, MCP servers' included, as a run offers them",
		Long: `List every tool of the configuration at PATH (a .hcl file, a directory, or a
plan saved with "symbi plan -out") as a run offers it to the model: its name,
where it comes from (a builtin, a command, an http endpoint, an MCP server), the
effect the gate decides on (for an MCP server's tool: the declared effect,
raised by the tool's annotations, never lowered), the agents that have it, its
description and its arguments. The MCP servers are started to list their
tools, exactly as a run starts them, and stopped before the command ends.

A server's tool that no run offers (one that requires MCP task augmentation,
which symbi's MCP client cannot do) is listed apart, with why.

--agent lists one agent's tools in the order its model sees them, with the
tools its tool_profile removed. --json prints one JSON document with each
tool's JSON Schema. --timeout bounds the start of every server together.

Exit status: 0 listed, 2 invalid configuration or usage, 4 a server did not
start or list its tools.`,
		Example: `  symbi tools examples/tools-mcp.hcl
  symbi tools --agent researcher .
  symbi tools --json . | jq '.tools[] | {name, effect}'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout <= 0 {
				return exitWith(exitInvalid, "--timeout must be more than 0, e.g. --timeout 1m")
			}
			path := pathArg(args)
			if path == "" {
				path = "."
			}
			p, baseDir, err := loadRunnable(cmd, path)
			if err != nil {
				return err
			}
			e, err := engine.New(p, engine.Options{
				BaseDir:   baseDir,
				Protected: runSources(cmd, path),
				LookupEnv: os.LookupEnv,
				Discovery: true,
			})
			if err != nil {
				return exitWith(exitInvalid, "%v", err)
			}
			defer e.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			out := cmd.OutOrStdout()
			if agent != "" {
				if _, err := e.AgentAddress(agent); err != nil {
					return exitWith(exitInvalid, "%v", err)
				}
				set, err := e.ToolsOf(ctx, agent)
				if err != nil {
					return exitWith(exitFailure, "%v", err)
				}
				if asJSON {
					jsonIndented(out, set)
					return nil
				}
				writeAgentTools(out, set)
				return nil
			}
			c, err := e.Catalog(ctx)
			if err != nil {
				return exitWith(exitFailure, "%v", err)
			}
			if asJSON {
				jsonIndented(out, c)
				return nil
			}
			writeCatalog(out, c)
			return nil
		},
	}
	addVarFlags(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "list this agent's tools only, in the order its model sees them")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document, with each tool's JSON Schema")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long the MCP servers may take, together, to start and list their tools")
	return cmd
}

func jsonIndented(w io.Writer, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return
	}
	w.Write(append(b, '\n'))
}

// writeCatalog prints each tool in three lines: name, source, effect and
// agents; the description's first paragraph; the arguments. Everything a
// server wrote is escaped (policy.EscapeLine): a tool's name or
// description cannot drive the terminal.
func writeCatalog(w io.Writer, c *engine.Catalog) {
	if len(c.Tools) == 0 {
		fmt.Fprintln(w, "The configuration has no tools.")
	}
	for i, t := range c.Tools {
		if i > 0 {
			fmt.Fprintln(w)
		}
		agents := "no agent"
		if len(t.Agents) > 0 {
			agents = "agents: " + agentNames(t.Agents)
		}
		if len(t.RemovedBy) > 0 {
			agents += " (removed by the tool_profile of " + agentNames(t.RemovedBy) + ")"
		}
		writeTool(w, t, agents)
	}
	writeWithheld(w, c.Withheld)
}

func writeTool(w io.Writer, t engine.Tool, extra string) {
	head := fmt.Sprintf("%s  %s  effect %s", t.Name, t.Origin(), t.Effect)
	if t.Approval != "" && t.Approval != "policy" {
		head += "  approval " + t.Approval
	}
	if extra != "" {
		head += "  " + extra
	}
	fmt.Fprintln(w, policy.EscapeLine(head))
	if d := firstParagraph(t.Description, 200); d != "" {
		fmt.Fprintln(w, "  "+policy.EscapeLine(d))
	}
	fmt.Fprintln(w, "  arguments: "+policy.EscapeLine(t.Signature))
}

func writeWithheld(w io.Writer, ws []engine.Withheld) {
	if len(ws) == 0 {
		return
	}
	fmt.Fprintf(w, "\nNot offered to any model:\n")
	for _, x := range ws {
		fmt.Fprintln(w, "  "+policy.EscapeLine(fmt.Sprintf("%s (%s): %s", x.Name, x.Source, x.Reason)))
	}
}

// writeAgentTools prints an agent's tools in the order its model sees
// them, then what its profile removed and what is not offered.
func writeAgentTools(w io.Writer, set *engine.AgentToolSet) {
	fmt.Fprintf(w, "%s: %d tool%s\n", set.Agent, len(set.Tools), pluralS(len(set.Tools)))
	for _, t := range set.Tools {
		fmt.Fprintln(w)
		writeTool(w, t, "")
	}
	if len(set.Removed) > 0 {
		fmt.Fprintln(w, "\n"+policy.EscapeLine("removed by the tool_profile: "+strings.Join(set.Removed, ", ")))
	}
	var ws []engine.Withheld
	for _, x := range set.Withheld {
		ws = append(ws, engine.Withheld{Withheld: x})
	}
	writeWithheld(w, ws)
}

func agentNames(addrs []string) string {
	names := make([]string, len(addrs))
	for i, a := range addrs {
		names[i] = strings.TrimPrefix(a, "agent.")
	}
	return strings.Join(names, ", ")
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// firstParagraph is the text up to its first blank line, on one line, cut
// at max characters.
func firstParagraph(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
