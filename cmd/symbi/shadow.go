package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

// maxShadowExamples bounds the disagreements listed per policy.
const maxShadowExamples = 5

func newPolicyShadowCmd() *cobra.Command {
	var where stateDirFlags
	var all, jsonOut bool
	cmd := &cobra.Command{
		Use:   "shadow [RUN...]",
		Short: "Summarise where policies in shadow mode disagreed, over many runs",
		Long: `A policy with mode = "shadow" is evaluated on every action like the others
and journalled, but never enforced. Shadow reads the journals of the runs named
(ids, or "latest"), or of every run with --all, and says per shadow policy on
how many actions it would have decided otherwise than what was enforced: how
many that ran it would have denied, how many that were refused it would have
allowed, how many it would have asked a person about; its engine errors; the
versions of it that decided. Below, up to five of its disagreements, with the
run, the iteration and its reason. A security team watches a new policy on
real traffic this way before switching it on.

The state directory is --state-dir, or the state_dir of the configuration
named by --config, or ./.symbi. A journal that does not verify is an error.
Exit status: 0, 2 no such run or no run given, 4 a journal that cannot be read.`,
		Example: `  symbi policy shadow --all
  symbi policy shadow latest 20261202T152141Z-187b2c5d --state-dir examples/.symbi`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return exitWith(exitInvalid, "name the runs (ids, or latest), or give --all")
			}
			stateDir, err := where.resolve(cmd)
			if err != nil {
				return err
			}
			ids := args
			if all {
				runs, err := journal.ListRuns(stateDir)
				if err != nil {
					return exitWith(exitFailure, "%v", err)
				}
				ids = nil
				for _, r := range runs {
					ids = append(ids, r.ID)
				}
			}
			var tallies []journal.ShadowTally
			examples := map[string][]string{}
			for _, arg := range ids {
				id, err := resolveRunID(stateDir, arg)
				if err != nil {
					return err
				}
				evs, _, err := journal.ReadToShow(stateDir, id)
				switch {
				case errors.Is(err, journal.ErrTampered) || errors.Is(err, journal.ErrUnverifiable):
					return exitWith(exitChanged, "run %s: %v (symbi runs verify %s)", id, err, id)
				case err != nil:
					return exitWith(exitFailure, "run %s: %v", id, err)
				}
				if t := journal.ShadowOf(evs); len(t) > 0 {
					tallies = journal.MergeShadow(tallies, t)
					collectDisagreements(examples, id, evs)
				}
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				for _, t := range tallies {
					jsonLine(out, t)
				}
				return nil
			}
			if len(tallies) == 0 {
				fmt.Fprintf(out, "no shadow policy decided in %s\n", count(len(ids), "run", "runs"))
				return nil
			}
			for _, t := range tallies {
				fmt.Fprintln(out, policy.EscapeLine(t.String()))
				for _, v := range t.Versions {
					fmt.Fprintf(out, "  version %s\n", v)
				}
				for _, e := range examples[t.Policy] {
					fmt.Fprintf(out, "  %s\n", e)
				}
				if n := t.Disagreements(); n > len(examples[t.Policy]) {
					fmt.Fprintf(out, "  … and %d more\n", n-len(examples[t.Policy]))
				}
			}
			return nil
		},
	}
	where.add(cmd, false)
	cmd.Flags().BoolVar(&all, "all", false, "every run in the state directory")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print each policy's tally as one JSON object per line")
	return cmd
}

// collectDisagreements adds to examples, per shadow policy, a line for each
// action of the run it would have decided otherwise, up to
// maxShadowExamples.
func collectDisagreements(examples map[string][]string, id string, evs []journal.Event) {
	for _, ev := range evs {
		if ev.Type != journal.PolicyEvaluated {
			continue
		}
		var d journal.PolicyEvaluatedData
		if ev.Decode(&d) != nil {
			continue
		}
		for _, rec := range d.Decisions {
			for _, s := range rec.Shadow {
				one := journal.TallyShadow(nil, journal.GateRecord{Decision: rec.Decision, Trail: rec.Trail, Shadow: []policy.Decision{s}})
				if one[0].Disagreements() == 0 || len(examples[s.Policy]) >= maxShadowExamples {
					continue
				}
				what := string(rec.Action.Type)
				if rec.Action.Type == policy.ToolCall {
					what = rec.Action.Tool + " " + policy.ArgumentsLine(rec.Action.Arguments, 60)
				}
				line := fmt.Sprintf("run %s iter %d: %s: enforced %s, shadow %s", id, ev.Iteration, what, rec.Decision.Outcome, s.Outcome)
				if s.Reason != "" {
					line += ": " + s.Reason
				}
				examples[s.Policy] = append(examples[s.Policy], policy.EscapeLine(strings.TrimSpace(line)))
			}
		}
	}
}
