package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/journal/render"
	"github.com/symbi-dev/symbi/symbitest"
)

func newRunsCmd() *cobra.Command {
	var where stateDirFlags
	var jsonOut bool
	var tf temporalFlags
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List past runs from their journals",
		Long: `List the runs recorded under the state directory (newest first): id, agent,
status (the termination reason; "running" for a run a process is running or
resuming; "incomplete" for a run that was killed and can be resumed with
"symbi resume ID"; "tampered" for a journal that does not verify, see
"symbi runs verify ID"; "newer_format" for a journal a newer symbi wrote),
iterations and start time. A journal written before symbi signed its
journals is marked unsigned.

The state directory is --state-dir, or the state_dir of the configuration
named by --config, or ./.symbi. With --temporal the runs are those on the
Temporal service (docs/temporal.md): "running" while their workflow is open.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if tf.on() {
				return listTemporalRuns(cmd, &tf, jsonOut)
			}
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
			runs, err := journal.ListRuns(stateDir)
			if err != nil {
				return exitWith(exitFailure, "%v", err)
			}
			return printRuns(cmd.OutOrStdout(), runs, jsonOut, "in "+stateDir)
		},
	}
	where.add(cmd, true)
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "print JSON, one object per line")
	cmd.AddCommand(newRunsExportCmd(&where))
	tf.add(cmd, true, false)
	cmd.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Show one run's timeline (ID \"latest\" is the newest run)",
		Long: `Show run ID's timeline, verifying every line of its journal first. A journal
that does not verify is shown up to the line before the first bad one, and
the command exits 1 naming that line. An unsigned journal (written before
symbi signed its journals) is shown with a warning on stderr. With
--temporal, the timeline is the one run ID's workflow serves.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tf.on() {
				return showTemporalRun(cmd, &tf, args[0], jsonOut)
			}
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
			id, err := resolveRunID(stateDir, args[0])
			if err != nil {
				return err
			}
			evs, unsigned, err := journal.ReadToShow(stateDir, id)
			if unsigned {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: run %s: %v\n", id, journal.ErrUnsigned)
			}
			// On a bad line, the events before it are shown: they verified.
			if len(evs) > 0 || err == nil {
				if jsonOut {
					for _, ev := range evs {
						jsonLine(cmd.OutOrStdout(), ev)
					}
				} else if _, werr := io.WriteString(cmd.OutOrStdout(), render.Timeline(evs)); werr != nil {
					return werr
				}
			}
			switch {
			case err == nil:
				return nil
			case errors.Is(err, journal.ErrTampered) || errors.Is(err, journal.ErrUnverifiable):
				return exitWith(exitChanged, "run %s: %v (symbi runs verify %s)", id, err, id)
			}
			return exitWith(exitFailure, "run %s: %v", id, err)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "verify ID",
		Short: "Check that a run's journal and plan are what symbi wrote",
		Long: `Verify run ID as resume does before it acts on it: every line of the journal
must carry a MAC, under the state directory's key, chained to the line before
it (so no line was edited, removed, added or moved), and plan.json must have
the digest the run's started lines recorded. A torn last line (a write cut
short by a crash) is not an error.

Exit codes: 0 intact; 1 not intact, with the first bad line (or the plan) and
why; 2 no such run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tf.on() {
				return exitWith(exitInvalid, "a run on Temporal has no journal to verify: its history is the Temporal service's")
			}
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
			id, err := resolveRunID(stateDir, args[0])
			if err != nil {
				return err
			}
			v, err := journal.Verify(stateDir, id)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return exitWith(exitInvalid, "no run %s in %s", id, stateDir)
			case err != nil:
				return exitWith(exitFailure, "run %s: %v", id, err)
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				jsonLine(out, v)
			} else if v.OK {
				fmt.Fprintf(out, "run %s: intact: %d lines verified; plan.json is the plan the run started with (%s)\n", id, v.Lines, v.PlanDigest)
				if v.Torn {
					fmt.Fprintln(out, "its torn last line (a write cut short by a crash) is not part of the journal; resume cuts it off")
				}
			}
			if !v.OK {
				if v.Line > 0 {
					return exitWith(exitChanged, "run %s is not intact (%d lines verified before line %d): %s", id, v.Lines, v.Line, v.Error)
				}
				return exitWith(exitChanged, "run %s is not intact: %s", id, v.Error)
			}
			return nil
		},
	})
	return cmd
}

// newRunsExportCmd is `symbi runs export`.
func newRunsExportCmd(where *stateDirFlags) *cobra.Command {
	var cassetteFile, scriptFile, model string
	cmd := &cobra.Command{
		Use:   "export ID --cassette FILE | --script FILE",
		Short: "Turn a finished run's model traffic into a cassette or a scripted model's script",
		Long: `Export the model turns of finished run ID (and of the runs under it:
delegations, evaluators, plan steps) so that any run you saw can become a
test. Every journal is verified first.

--cassette FILE writes a cassette for "symbi run --replay" and a test's
cassette attribute. A journal keeps the conversation but not each request as
it was sent, so its exchanges carry no request: each answers any request to
its model, in turn, until "symbi test -update" (or "symbi run --replay FILE
--record-missing") writes the requests in; that calls no model.

--script FILE writes a scripted model's script (docs/providers.md), played in
order; --model ADDR keeps one model's turns, which a run of several models
needs, one script per model. A FILE of "-" is standard output.

A best-of-N run cannot be exported: its candidates are not journalled.`,
		Example: `  symbi runs export latest --cassette tests/cassettes/quick.json
  symbi runs export 20261202T152141Z-187b2c5d --script - --model model.fast`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cassetteFile == "" && scriptFile == "" {
				return exitWith(exitInvalid, "say what to export: --cassette FILE, --script FILE, or both")
			}
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
			id, err := resolveRunID(stateDir, args[0])
			if err != nil {
				return err
			}
			if cassetteFile != "" {
				c, err := symbitest.ExportCassette(stateDir, id)
				if err != nil {
					return exportError(err)
				}
				if cassetteFile == "-" {
					b, err := c.Encode()
					if err != nil {
						return exitWith(exitFailure, "%v", err)
					}
					cmd.OutOrStdout().Write(b)
				} else if err := c.Save(cassetteFile); err != nil {
					return exitWith(exitFailure, "%v", err)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "exported %s of run %s to %s\n", count(len(c.Exchanges), "model exchange", "model exchanges"), id, cassetteFile)
				}
			}
			if scriptFile != "" {
				b, err := symbitest.ExportScript(stateDir, id, model)
				if err != nil {
					return exportError(err)
				}
				if scriptFile == "-" {
					cmd.OutOrStdout().Write(b)
				} else if err := writeFileAtomic(scriptFile, b); err != nil {
					return exitWith(exitFailure, "%v", err)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "exported the model turns of run %s to %s\n", id, scriptFile)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cassetteFile, "cassette", "", "write a cassette to this file")
	cmd.Flags().StringVar(&scriptFile, "script", "", "write a scripted model's script to this file")
	cmd.Flags().StringVar(&model, "model", "", "with --script: only this model's turns (model.NAME)")
	return cmd
}

// exportError is the exit of a run that cannot be exported: one that is
// missing or unfinished is the user's to fix (2), a journal that does not
// verify is 1, as for runs show.
func exportError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exitWith(exitInvalid, "%v", err)
	case errors.Is(err, journal.ErrTampered) || errors.Is(err, journal.ErrUnverifiable) || errors.Is(err, journal.ErrUnsigned):
		return exitWith(exitChanged, "%v", err)
	}
	return exitWith(exitInvalid, "%v", err)
}

// writeFileAtomic writes b to path through a temporary file in its
// directory.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
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

// printRuns is the table of `symbi runs` (or one JSON object per run);
// where says where none were found.
func printRuns(out io.Writer, runs []journal.RunSummary, jsonOut bool, where string) error {
	if jsonOut {
		for _, r := range runs {
			jsonLine(out, r)
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintf(out, "no runs %s\n", where)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tITERATIONS\tSTARTED")
	for _, r := range runs {
		status := r.Status
		if r.Limit != "" {
			status += " (" + r.Limit + ")"
		}
		if r.Unsigned {
			status += ", unsigned"
		}
		started := "-" // a journal whose first line cannot be read or trusted
		if !r.Started.IsZero() {
			started = r.Started.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.ID, strings.TrimPrefix(r.Agent, "agent."), status, r.Iterations, started)
	}
	return tw.Flush()
}
