package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

// Live is the compact form of an event that `symbi run` writes to standard
// error as the run goes, one string per line (a turn that calls three tools
// is three lines); nil hides the event. depth is the delegation depth of
// the agent the event belongs to: a delegate's start is worth a line, the
// top-level run's is not. The caller indents the lines by depth.
//
// An answer that no policy addressed (allowed by default) is not worth a
// line of its own, and neither are most events that a line already covers
// (tools_dispatched before its results). Text from the model or a tool is
// cut to a width that keeps the line on one terminal row, except a tool
// call's arguments: every key is shown (policy.ArgumentsLine), because the
// first 100 characters could be a benign description with the real command
// after them.
func Live(ev journal.Event, depth int) []string {
	lines := liveLines(ev, depth)
	for i, l := range lines {
		lines[i] = policy.EscapeLine(l)
	}
	return lines
}

func liveLines(ev journal.Event, depth int) []string {
	switch ev.Type {
	case journal.Started:
		var d journal.StartedData
		if ev.Decode(&d) != nil {
			return nil
		}
		var lines []string
		switch {
		case d.Resume > 0:
			lines = append(lines, fmt.Sprintf("↻ resuming run %s after iteration %d", ev.RunID, ev.Iteration))
		case depth > 0:
			lines = append(lines, "▸ "+strings.TrimPrefix(ev.Agent, "agent."))
		}
		for _, w := range d.WithheldTools {
			lines = append(lines, withheldLine(w))
		}
		return lines
	case journal.ModelRouted:
		var d journal.ModelRoutedData
		if ev.Decode(&d) != nil {
			return nil
		}
		line := "⇢ " + d.Model
		if len(d.Rejected) > 0 {
			line += fmt.Sprintf(" (%d rejected)", len(d.Rejected))
		}
		return []string{line}
	case journal.ReasoningComplete:
		var d journal.ReasoningCompleteData
		if ev.Decode(&d) != nil {
			return nil
		}
		var lines []string
		for _, c := range d.ToolCalls {
			lines = append(lines, fmt.Sprintf("→ %s %s", clip(c.Name, 60), policy.ArgumentsLine(json.RawMessage(c.Arguments), 100)))
		}
		return lines
	case journal.PolicyEvaluated:
		var d journal.PolicyEvaluatedData
		if ev.Decode(&d) != nil {
			return nil
		}
		var lines []string
		for _, g := range d.Decisions {
			dec := g.Decision
			if dec.Outcome == policy.Allow && dec.Policy == "" && g.Action.Type == policy.Respond {
				continue
			}
			what := g.Action.Tool
			if what == "" {
				what = string(g.Action.Type)
			}
			mark := "✓"
			if dec.Outcome == policy.Deny {
				mark = "✗"
			}
			line := fmt.Sprintf("%s %s %s", mark, dec.Outcome, clip(what, 60)) // an unknown tool's name is the model's
			if dec.Policy != "" {
				line += " by " + dec.Policy
			}
			if dec.Reason != "" && dec.Outcome != policy.Allow {
				line += ": " + clip(dec.Reason, 160)
			}
			lines = append(lines, line)
			// A shadow policy is worth a line where it would have decided
			// otherwise: that is what watching it is for.
			ran := dec.Outcome == policy.Allow || dec.Outcome == policy.Modify
			for _, s := range g.Shadow {
				deny, allow := s.Outcome == policy.Deny, s.Outcome == policy.Allow || s.Outcome == policy.Modify
				if deny && ran || allow && !ran {
					l := fmt.Sprintf("  ◌ shadow %s would %s %s", s.Policy, s.Outcome, clip(what, 60))
					if s.Reason != "" {
						l += ": " + clip(s.Reason, 140)
					}
					lines = append(lines, l)
				}
			}
		}
		return lines
	case journal.ApprovalDecided:
		var d journal.ApprovalDecidedData
		if ev.Decode(&d) != nil {
			return nil
		}
		if d.Approved {
			line := fmt.Sprintf("✓ approved %s by %s", clip(d.Tool, 60), clip(d.By, 40))
			switch {
			case d.Via == "standing":
				line += " (a remembered rule)"
			case len(d.Arguments) > 0:
				line += " with edited arguments " + policy.ArgumentsLine(d.Arguments, 100)
			}
			return []string{line}
		}
		if d.Code != "" {
			return one("✗ not approved (%s) %s: %s", d.Code, clip(d.Tool, 60), clip(d.Reason, 160))
		}
		return one("✗ not approved %s: %s", clip(d.Tool, 60), clip(d.Reason, 160))
	case journal.ApprovalRemembered:
		var d journal.ApprovalRememberedData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("✓ remembered by %s: %s", clip(d.By, 40), clip(d.Rule, 200))
	case journal.ApprovalRejected:
		var d journal.ApprovalRejectedData
		if ev.Decode(&d) != nil {
			return nil
		}
		line := fmt.Sprintf("✗ ignored a decision on %s (%s): %s", clip(d.Tool, 60), clip(d.RequestID, 20), clip(d.Reason, 100))
		if d.By != "" {
			line += fmt.Sprintf(", claimed by %s", clip(d.By, 40))
		}
		return []string{line}
	case journal.ToolResult:
		var d journal.ToolResultData
		if ev.Decode(&d) != nil {
			return nil
		}
		if d.Error != "" {
			return one("← %s failed (%s): %s", d.Tool, d.ErrorKind, clip(d.Error, 160))
		}
		return one("← %s: %s", d.Tool, clip(d.Output, 160))
	case journal.ToolOutcomeUnknown:
		var d journal.ToolOutcomeUnknownData
		if ev.Decode(&d) != nil {
			return nil
		}
		if d.Retried {
			return one("↻ %s was cut short by the interruption: running it again (on_resume %s)", d.Tool, d.OnResume)
		}
		return one("? %s was cut short by the interruption: outcome unknown, not run again (%s)", d.Tool, clip(d.Reason, 120))
	case journal.RecoveryTriggered:
		var d journal.RecoveryTriggeredData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("↻ %s %s: %s", d.Strategy, d.Tool, clip(d.Error, 120))
	case journal.CandidateFinished:
		var d journal.CandidateFinishedData
		if ev.Decode(&d) != nil {
			return nil
		}
		line := fmt.Sprintf("◇ candidate %d %s", d.Index, d.Status)
		if d.Error != "" {
			line += ": " + clip(d.Error, 120)
		}
		return []string{line}
	case journal.CandidateScored:
		var d journal.CandidateScoredData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("◇ candidate %d score %v", d.Index, d.Score)
	case journal.CandidateSelected:
		var d journal.CandidateSelectedData
		if ev.Decode(&d) != nil {
			return nil
		}
		if d.Index < 0 {
			return one("✗ no candidate selected: %s", d.Reason)
		}
		return one("★ candidate %d selected (%s)", d.Index, d.Selector)
	case journal.ReflectionEvaluated:
		var d journal.ReflectionEvaluatedData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("◇ attempt %d: %s (score %v)", d.Attempt, d.Verdict, d.Score)
	case journal.StepFinished:
		var d journal.StepFinishedData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("◇ step %s %s", clip(d.StepID, 60), d.Status)
	case journal.ToolDrift:
		var d journal.ToolDriftData
		if ev.Decode(&d) != nil {
			return nil
		}
		what := map[string]string{
			"refused": "refused (on_drift = \"refuse\")",
			"hidden":  "hidden from the model (on_drift = \"hide_tool\")",
			"warned":  "used anyway (on_drift = \"warn\")",
		}[d.Action]
		when := ""
		if d.ListChanged {
			when = ", after list_changed"
		}
		lines := []string{fmt.Sprintf("⚠ %s%s: %s", d.Summary, when, what)}
		// The diff is what a person needs to judge the change; a drift the
		// run refuses shows it in the error instead.
		if d.Action != "refused" {
			for _, l := range d.Details {
				lines = append(lines, "    "+clip(l, 200))
			}
		}
		return lines
	case journal.DelegationStarted:
		var d journal.DelegationStartedData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("⇒ delegate to %s: %s", strings.TrimPrefix(d.Target, "agent."), clip(d.Task, 100))
	case journal.DelegationFinished:
		var d journal.DelegationFinishedData
		if ev.Decode(&d) != nil {
			return nil
		}
		return one("⇐ %s %s", strings.TrimPrefix(d.Target, "agent."), d.Reason)
	}
	return nil
}

func one(format string, args ...any) []string {
	return []string{fmt.Sprintf(format, args...)}
}

// clip is s on one line of at most n characters: runs of white space
// become one space, and control and invisible characters are escaped (a
// tool's output or a model's text could otherwise move the cursor or
// rewrite the line on the terminal).
func clip(s string, n int) string {
	s = policy.EscapeLine(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// withheldLine says that a server's tool is not offered to the model, and
// why: "⚠ simulate-research-query of mcp_server.everything is not offered:
// requires MCP task augmentation …".
func withheldLine(w journal.WithheldTool) string {
	return fmt.Sprintf("⚠ %s of %s is not offered: %s", clip(w.Tool, 60), w.Source, w.Reason)
}

// ToolCallProgress is the one-line status `symbi run` shows on a terminal
// while the model writes a tool call (its tool_call_delta events): the
// tool and the end of the arguments written so far, at most width
// characters in all, control and invisible characters escaped. The line
// is replaced as pieces arrive and cleared for the call's "→" line, which
// the turn's reasoning_complete brings.
func ToolCallProgress(name, args string, width int) string {
	head := "✎ " + clip(name, 40) + " "
	tail := policy.EscapeLine(strings.Join(strings.Fields(args), " "))
	room := width - len([]rune(head))
	if r := []rune(tail); room > 1 && len(r) > room {
		tail = "…" + string(r[len(r)-room+1:])
	}
	return head + tail
}
