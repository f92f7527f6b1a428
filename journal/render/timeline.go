package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

// Timeline renders a run's events, one line each: time since the start,
// sequence number, iteration, event type and what happened (Describe),
// under a line that sums the run up. `symbi runs show` and the REPL's
// :journal both print it.
func Timeline(evs []journal.Event) string {
	if len(evs) == 0 {
		return "(empty journal)\n"
	}
	sum := journal.Summarize(evs)
	var b strings.Builder
	fmt.Fprintf(&b, "run %s  %s  %s", sum.ID, sum.Agent, sum.Status)
	if sum.Limit != "" {
		fmt.Fprintf(&b, " (%s)", sum.Limit)
	}
	fmt.Fprintf(&b, ", %s", Usage(sum.Iterations, sum.Usage))
	if sum.Reserved != (budget.Amount{}) {
		fmt.Fprintf(&b, "; %s", Reserved(sum.Reserved))
		if sum.Finished.IsZero() {
			b.WriteString(" by the call in flight")
		}
	}
	// What people answered and where shadow policies disagreed belong to
	// the run's summary, on its line.
	if a := journal.ApprovalsOf(evs); !a.Zero() {
		fmt.Fprintf(&b, "; approvals: %s", a)
	}
	for _, t := range journal.ShadowOf(evs) {
		fmt.Fprintf(&b, "; shadow: %s", policy.EscapeLine(t.String()))
	}
	b.WriteByte('\n')
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	start := evs[0].Time
	for _, ev := range evs {
		fmt.Fprintf(w, "  +%s\t#%d\titer %d\t%s\t%s\n", Duration(ev.Time.Sub(start)), ev.Seq, ev.Iteration, ev.Type, Describe(ev))
	}
	w.Flush()
	return b.String()
}

// Usage sums up what a run consumed: "3 iterations, 3 model calls, 2 tool
// calls, 412 tokens, $0.0000".
func Usage(iterations int, u budget.Amount) string {
	return fmt.Sprintf("%s, %s, %s, %d tokens, $%.4f",
		plural(iterations, "iteration"), plural(int(u.ModelCalls), "model call"), plural(int(u.ToolCalls), "tool call"), u.TotalTokens, u.CostUSD)
}

// Reserved says what a run's budget held for calls not settled, beside
// its usage: "reserved 1 model call, 612 tokens, $0.0006"; "" for nothing.
func Reserved(u budget.Amount) string {
	if u == (budget.Amount{}) {
		return ""
	}
	return fmt.Sprintf("reserved %s, %d tokens, $%.4f", plural(int(u.ModelCalls), "model call"), u.TotalTokens, u.CostUSD)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Describe says in one line what an event records, with every event
// type's data decoded: the timeline's last column, and what the REPL's
// :step shows of a phase. Much of it is text from the model, a tool or a
// file: control and invisible characters are escaped (policy.EscapeLine),
// so none of it can move the cursor or break the line.
func Describe(ev journal.Event) string {
	return policy.EscapeLine(eventText(ev))
}

func eventText(ev journal.Event) string {
	switch ev.Type {
	case journal.Started:
		var d journal.StartedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("%s, mode %s, input %s", d.Agent, d.Mode, quoteShort(d.Input))
			for _, w := range d.WithheldTools {
				s += fmt.Sprintf("; %s of %s not offered: %s", w.Tool, w.Source, w.Reason)
			}
			return s
		}
	case journal.ModelRouted:
		var d journal.ModelRoutedData
		if ev.Decode(&d) == nil {
			s := d.Model
			if d.Router != "" {
				s += " by " + d.Router
			}
			if d.Reason != "" {
				s += ": " + d.Reason
			}
			return s
		}
	case journal.ModelCallStarted:
		var d journal.ModelCallStartedData
		if ev.Decode(&d) == nil {
			return fmt.Sprintf("%s, estimated %d + %d tokens", d.Model, d.EstimatedPromptTokens, d.EstimatedCompletionTokens)
		}
	case journal.ToolOutcomeUnknown:
		var d journal.ToolOutcomeUnknownData
		if ev.Decode(&d) == nil {
			if d.Retried {
				return fmt.Sprintf("%s of the interrupted attempt: run again (on_resume %s)", d.Tool, d.OnResume)
			}
			return fmt.Sprintf("%s of the interrupted attempt: not run again, %s", d.Tool, d.Reason)
		}
	case journal.ReasoningComplete:
		var d journal.ReasoningCompleteData
		if ev.Decode(&d) == nil {
			return fmt.Sprintf("%s proposes %s", d.Model, actionsLine(d.Actions))
		}
	case journal.PolicyEvaluated:
		var d journal.PolicyEvaluatedData
		if ev.Decode(&d) == nil {
			var parts []string
			for _, g := range d.Decisions {
				parts = append(parts, Gate(g))
			}
			return strings.Join(parts, "; ")
		}
	case journal.ApprovalRequested:
		var d journal.ApprovalRequestedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("%s %s waits for a person: %s", d.Tool, compactJSON(d.Arguments), d.Reason)
			if d.ArgumentsDigest != "" {
				s += " (arguments " + d.ArgumentsDigest + ")"
			}
			return s
		}
	case journal.ApprovalRejected:
		var d journal.ApprovalRejectedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("%s: ignored decision on request %s: %s", d.Tool, d.RequestID, d.Reason)
			if d.By != "" {
				s += fmt.Sprintf(" (claimed by %q)", d.By)
			}
			return s
		}
	case journal.ApprovalDecided:
		var d journal.ApprovalDecidedData
		if ev.Decode(&d) == nil {
			s := d.Tool + " denied"
			if d.Code != "" {
				s = d.Tool + " not approved (" + d.Code + ")"
			}
			if d.Approved {
				s = d.Tool + " approved"
			}
			if d.By != "" {
				s += " by " + d.By
			}
			if d.Via == "standing" {
				s += " by a remembered rule"
			}
			if len(d.Arguments) > 0 {
				s += " with edited arguments " + compactJSON(d.Arguments)
			}
			if d.Reason != "" {
				s += ": " + d.Reason
			}
			return s
		}
	case journal.ToolsDispatched:
		var d journal.ToolsDispatchedData
		if ev.Decode(&d) == nil {
			var parts []string
			for _, c := range d.Calls {
				parts = append(parts, fmt.Sprintf("%s %s", c.Tool, c.Arguments))
			}
			return strings.Join(parts, ", ")
		}
	case journal.ToolResult:
		var d journal.ToolResultData
		if ev.Decode(&d) == nil {
			if d.Error != "" {
				return fmt.Sprintf("%s failed (%s): %s", d.Tool, d.ErrorKind, d.Error)
			}
			return fmt.Sprintf("%s returned %s", d.Tool, quoteShort(d.Output))
		}
	case journal.RecoveryTriggered:
		var d journal.RecoveryTriggeredData
		if ev.Decode(&d) == nil {
			return fmt.Sprintf("%s %s (attempt %d) after %s", d.Tool, d.Strategy, d.Attempt, d.Error)
		}
	case journal.ObservationsCollected:
		var d journal.ObservationsCollectedData
		if ev.Decode(&d) == nil {
			return fmt.Sprintf("%s (%d denied, %d errors)", plural(d.Count, "observation"), d.Denied, d.Errors)
		}
	case journal.PlanCreated:
		var d journal.PlanCreatedData
		if ev.Decode(&d) == nil {
			var parts []string
			for _, st := range d.Steps {
				p := st.ID + " " + quoteShort(st.Description)
				if len(st.DependsOn) > 0 {
					p += " after " + strings.Join(st.DependsOn, ", ")
				}
				parts = append(parts, p)
			}
			what := "plan"
			if d.Replan {
				what = "new plan"
			}
			return fmt.Sprintf("%s of %s: %s", what, plural(len(d.Steps), "step"), strings.Join(parts, "; "))
		}
	case journal.StepStarted:
		var d journal.StepStartedData
		if ev.Decode(&d) == nil {
			return fmt.Sprintf("step %s, attempt %d", d.StepID, d.Attempt)
		}
	case journal.StepFinished:
		var d journal.StepFinishedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("step %s %s", d.StepID, d.Status)
			if d.Output != "" {
				s += ": " + quoteShort(d.Output)
			}
			if d.Error != "" {
				s += ": " + d.Error
			}
			return s
		}
	case journal.ReflectionEvaluated:
		var d journal.ReflectionEvaluatedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("attempt %d scored %.2f by %s: %s", d.Attempt, d.Score, d.Evaluator, d.Verdict)
			if d.Feedback != "" {
				s += ", " + quoteShort(d.Feedback)
			}
			return s
		}
	case journal.DelegationStarted:
		var d journal.DelegationStartedData
		if ev.Decode(&d) == nil {
			return fmt.Sprintf("to %s: %s", d.Target, quoteShort(d.Task))
		}
	case journal.DelegationFinished:
		var d journal.DelegationFinishedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("%s %s", d.Target, d.Reason)
			if d.Answer != "" {
				s += ", answer " + quoteShort(d.Answer)
			}
			if d.Error != "" {
				s += ": " + d.Error
			}
			return s
		}
	case journal.CandidateStarted:
		var d journal.CandidateStartedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("candidate %d", d.Index)
			if len(d.Vary) > 0 {
				b, _ := json.Marshal(d.Vary) // sorted keys
				s += " with " + string(b)
			}
			return s
		}
	case journal.KnowledgeInjected:
		var d journal.KnowledgeInjectedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("%s from %s", plural(len(d.Facts), "fact"), d.Store)
			if d.Query != "" {
				s += " for " + quoteShort(d.Query)
			}
			return s
		}
	case journal.Prehydrated:
		var d journal.PrehydratedData
		if ev.Decode(&d) == nil {
			var parts []string
			for _, r := range d.References {
				p := r.Kind + " " + quoteShort(r.Value)
				if r.Error != "" {
					p += " failed: " + r.Error
				} else {
					p += fmt.Sprintf(", %d tokens", r.Tokens)
				}
				parts = append(parts, p)
			}
			return fmt.Sprintf("%s, %d tokens: %s", plural(len(d.References), "reference"), d.Tokens, strings.Join(parts, "; "))
		}
	case journal.CandidateFinished:
		var d journal.CandidateFinishedData
		if ev.Decode(&d) == nil {
			s := fmt.Sprintf("candidate %d %s", d.Index, d.Status)
			if d.Content != "" {
				s += ": " + quoteShort(d.Content)
			}
			if d.Error != "" {
				s += ": " + d.Error
			}
			return s
		}
	case journal.CandidateScored:
		var d journal.CandidateScoredData
		if ev.Decode(&d) == nil {
			verdict := "rejected"
			if d.Accepted {
				verdict = "accepted"
			}
			return fmt.Sprintf("candidate %d scored %.2f, %s", d.Index, d.Score, verdict)
		}
	case journal.CandidateSelected:
		var d journal.CandidateSelectedData
		if ev.Decode(&d) == nil {
			if d.Index < 0 {
				return fmt.Sprintf("no candidate selected (%s): %s", d.Selector, d.Reason)
			}
			return fmt.Sprintf("candidate %d selected by %s, score %.2f", d.Index, d.Selector, d.Score)
		}
	case journal.ApprovalRemembered:
		var d journal.ApprovalRememberedData
		if ev.Decode(&d) == nil {
			return "remembered by " + d.By + ": " + d.Rule
		}
	case journal.ToolDrift:
		var d journal.ToolDriftData
		if ev.Decode(&d) == nil {
			s := d.Summary + ": " + d.Action
			if d.ListChanged {
				s += " (after list_changed)"
			}
			if len(d.Details) > 0 {
				s += "; " + strings.Join(d.Details, "; ")
			}
			return s
		}
	case journal.Terminated:
		var d journal.TerminatedData
		if ev.Decode(&d) == nil {
			s := d.Reason
			if d.Limit != "" {
				s += " (" + d.Limit + ")"
			}
			if d.Answer != "" {
				s += ", answer " + quoteShort(d.Answer)
			}
			if d.Reserved != nil && *d.Reserved != (budget.Amount{}) {
				s += ", " + Reserved(*d.Reserved)
			}
			if d.Error != "" {
				s += ": " + d.Error
			}
			return s
		}
	}
	return quoteShort(string(ev.Data))
}

func actionsLine(as []policy.Action) string {
	if len(as) == 0 {
		return "nothing"
	}
	var parts []string
	for _, a := range as {
		parts = append(parts, actionText(a))
	}
	return strings.Join(parts, ", ")
}

// actionText is an action with what it carries: a tool call's arguments, an
// answer's text.
func actionText(a policy.Action) string {
	switch a.Type {
	case policy.ToolCall:
		return fmt.Sprintf("tool_call %s %s", a.Tool, compactJSON(a.Arguments))
	case policy.Delegate:
		return fmt.Sprintf("delegate to %s: %s", a.Target, quoteShort(a.Task))
	case policy.Respond:
		return "respond " + quoteShort(a.Content)
	case policy.Terminate:
		return "terminate " + quoteShort(a.Reason)
	}
	return string(a.Type)
}

// Gate is one gate record on one line, escaped: the action's name and the
// decision on it, "shell: deny by policy.rules (rules): reason", and what
// each shadow policy decided, "[shadow policy.strict: deny]".
func Gate(g journal.GateRecord) string {
	s := actionName(g.Action) + ": " + Decision(g.Decision)
	for _, d := range g.Shadow {
		s += fmt.Sprintf(" [shadow %s: %s]", d.Policy, d.Outcome)
	}
	return policy.EscapeLine(s)
}

// actionName names an action briefly: the tool, or the action's type.
func actionName(a policy.Action) string {
	if a.Type == policy.ToolCall {
		return a.Tool
	}
	return string(a.Type)
}

func compactJSON(raw json.RawMessage) string {
	var b strings.Builder
	if len(raw) == 0 {
		return "{}"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	b.Write(out)
	return b.String()
}

// quoteShort quotes text for one line, cut at 120 characters.
func quoteShort(s string) string {
	const max = 120
	r := []rune(s)
	if len(r) > max {
		return fmt.Sprintf("%q…", string(r[:max]))
	}
	return fmt.Sprintf("%q", s)
}

// Decision is one decision on one line: "allow by policy.rules (rules):
// reason". It is not escaped: Describe escapes the line it is part of.
func Decision(d policy.Decision) string {
	s := string(d.Outcome)
	switch {
	case d.Policy != "" && d.Engine != "":
		s += fmt.Sprintf(" by %s (%s)", d.Policy, d.Engine)
	case d.Policy != "":
		s += " by " + d.Policy
	case d.Engine != "":
		s += " by " + d.Engine
	}
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	if d.Outcome == policy.Modify && len(d.Arguments) > 0 {
		s += fmt.Sprintf(" (arguments now %s)", d.Arguments)
	}
	if d.EngineError {
		s += " (an engine error, mapped to deny)"
	}
	return s
}

// Duration keeps printed times readable: microseconds below a
// millisecond, milliseconds below a second.
func Duration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
