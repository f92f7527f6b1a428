package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/interp/engine"
	"github.com/symbi-dev/symbi/journal"
)

// defaultStateDir is where runs, runs show and resume look without
// --state-dir: the state_dir every configuration gets unless it sets one.
const defaultStateDir = ".symbi"

func newRunsCmd() *cobra.Command {
	var stateDir string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List past runs from their journals",
		Long: `List the runs recorded under the state directory (newest first): id, agent,
status (the termination reason, or "incomplete" for a run that was killed and
can be resumed with "symbi resume ID"), iterations and start time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := journal.ListRuns(stateDir)
			if err != nil {
				return exitWith(exitFailure, "%v", err)
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				for _, r := range runs {
					jsonLine(out, r)
				}
				return nil
			}
			if len(runs) == 0 {
				fmt.Fprintf(out, "no runs in %s\n", stateDir)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tITERATIONS\tSTARTED")
			for _, r := range runs {
				status := r.Status
				if r.Limit != "" {
					status += " (" + r.Limit + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.ID, strings.TrimPrefix(r.Agent, "agent."), status, r.Iterations, r.Started.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", defaultStateDir, "the state directory that holds the runs")
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "print JSON, one object per line")
	cmd.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Show one run's timeline (ID \"latest\" is the newest run)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := resolveRunID(stateDir, args[0])
			if err != nil {
				return err
			}
			evs, err := journal.ReadFile(journal.Path(stateDir, id))
			if err != nil {
				return exitWith(exitFailure, "run %s: %v", id, err)
			}
			if jsonOut {
				for _, ev := range evs {
					jsonLine(cmd.OutOrStdout(), ev)
				}
				return nil
			}
			showTimeline(cmd.OutOrStdout(), evs)
			return nil
		},
	})
	return cmd
}

// resolveRunID turns "latest" into the newest run's id.
func resolveRunID(stateDir, id string) (string, error) {
	if id != "latest" {
		return id, nil
	}
	runs, err := journal.ListRuns(stateDir)
	if err != nil {
		return "", exitWith(exitFailure, "%v", err)
	}
	if len(runs) == 0 {
		return "", exitWith(exitInvalid, "no runs in %s", stateDir)
	}
	return runs[0].ID, nil
}

// showTimeline prints one line per event: seq, time since the start,
// iteration, event and what happened.
func showTimeline(w io.Writer, evs []journal.Event) {
	s := journal.Summarize(evs)
	fmt.Fprintf(w, "run %s · %s · %s · %d iterations · %d tokens · $%.4f\n\n", s.ID, strings.TrimPrefix(s.Agent, "agent."), s.Status, s.Iterations, s.Usage.TotalTokens, s.Usage.CostUSD)
	if len(evs) == 0 {
		return
	}
	start := evs[0].Time
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, ev := range evs {
		fmt.Fprintf(tw, "%d\t+%s\t#%d\t%s\t%s\n", ev.Seq, ev.Time.Sub(start).Round(time.Millisecond), ev.Iteration, ev.Type, timelineDetail(ev))
	}
	tw.Flush()
}

// timelineDetail is the compact description the run command prints, and
// for the events it leaves out, the gist of their data.
func timelineDetail(ev journal.Event) string {
	e := engine.Event{Type: ev.Type, Data: ev.Data, RunID: ev.RunID, Agent: ev.Agent, Iteration: ev.Iteration}
	if line := describeEvent(e, true); line != "" {
		return strings.ReplaceAll(line, "\n", "; ")
	}
	var d map[string]any
	_ = json.Unmarshal(ev.Data, &d)
	switch ev.Type {
	case journal.Started:
		return fmt.Sprintf("%s (%v): %s", strings.TrimPrefix(fmt.Sprint(d["agent"]), "agent."), d["mode"], clip(fmt.Sprint(d["input"]), 80))
	case journal.ReasoningComplete:
		return "answer: " + clip(fmt.Sprint(d["content"]), 100)
	case journal.ToolsDispatched:
		calls, _ := d["calls"].([]any)
		return fmt.Sprintf("%d call(s)", len(calls))
	case journal.ObservationsCollected:
		return fmt.Sprintf("%v observation(s), %v denied, %v error(s)", d["count"], d["denied"], d["errors"])
	case journal.Terminated:
		s := fmt.Sprint(d["reason"])
		if l, ok := d["limit"].(string); ok && l != "" {
			s += " (" + l + ")"
		}
		if e, ok := d["error"].(string); ok && e != "" {
			s += ": " + clip(e, 100)
		}
		return s
	}
	return ""
}
