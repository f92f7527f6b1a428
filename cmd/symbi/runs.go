package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/repl"
)

func newRunsCmd() *cobra.Command {
	var where stateDirFlags
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List past runs from their journals",
		Long: `List the runs recorded under the state directory (newest first): id, agent,
status (the termination reason, or "incomplete" for a run that was killed and
can be resumed with "symbi resume ID"), iterations and start time.

The state directory is --state-dir, or the state_dir of the configuration
named by --config, or ./.symbi.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
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
	where.add(cmd, true)
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "print JSON, one object per line")
	cmd.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Show one run's timeline (ID \"latest\" is the newest run)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
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
			// The REPL's :journal prints the same timeline.
			_, err = io.WriteString(cmd.OutOrStdout(), repl.Timeline(evs))
			return err
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
