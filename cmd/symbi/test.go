package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/symbi-dev/symbi/symbitest"
)

func newTestCmd() *cobra.Command {
	var (
		filters           []string
		jsonOut, update   bool
		recordChunks      bool
		junitFile, stateD string
		parallel          int
	)
	cmd := &cobra.Command{
		Use:   "test [PATH]",
		Short: "Run the agents' tests: *.symbitest.hcl files of run and assert blocks",
		Long: `Test runs the test files PATH names: a *.symbitest.hcl file; the test file of
a configuration file (X.symbitest.hcl beside X.hcl); or every *.symbitest.hcl
under a directory (not in hidden directories or node_modules). PATH defaults
to the current directory.

Each run block runs an agent of the configuration it tests (X.hcl beside
X.symbitest.hcl, or the file's config attribute) through the engine, as
"symbi run" does: journalled under the configuration's state_dir, its
models answering from a cassette of recorded traffic (offline, no key), a
scripted model's script, or the configured providers. The run's result is
then checked: it must complete unless expect_failures says how it may end,
and every assert block's condition must hold. docs/testing.md has the
language and a walk-through.

Every test file is checked before anything runs; an invalid one is
reported with its file, line and column, and nothing runs.

A failed assertion is shown with its error_message, the values its
condition refers to, and the run's id (symbi runs show ID). A request that
no longer matches its cassette is shown as a diff of the two requests;
-update records it again from the live model (and records a cassette that
does not exist yet), leaving what still matches as it was.

Exit codes: 0 every run passed; 1 a run failed or could not run; 2 the
tests are invalid (or no test file, or no run matches -filter).`,
		Example: `  symbi test                         # every test file under the current directory
  symbi test examples/               # the examples' tests, as CI runs them
  symbi test -filter 'denies_*' agent.symbitest.hcl
  symbi test -update agent.symbitest.hcl      # re-record what changed, from the live model
  symbi test -json -junit-xml report.xml .    # for CI`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			files, err := symbitest.Discover(pathArg(args))
			if err != nil {
				return exitWith(exitInvalid, "%v", err)
			}
			if len(files) == 0 {
				return exitWith(exitInvalid, "no test files (*.symbitest.hcl) under %s", pathArg(args))
			}
			suite, diags := symbitest.Load(cmd.Context(), files, symbitest.LoadOptions{Update: update, LookupEnv: os.LookupEnv, SymbiVersion: version})
			if diags.HasErrors() {
				if jsonOut {
					_ = symbitest.WriteJSONInvalid(stdout, diags)
				} else {
					printDiags(stderr, suite.Sources, diags)
				}
				return exitWith(exitInvalid, "")
			}
			if !jsonOut {
				printDiags(stderr, suite.Sources, diags) // warnings
			}
			runs, err := suite.Select(filters)
			if err != nil {
				return exitWith(exitInvalid, "%v", err)
			}
			if len(runs) == 0 {
				return exitWith(exitInvalid, "no run matches -filter %s", strings.Join(filters, ", -filter "))
			}
			ctx, stop := interruptible(cmd.Context(), stderr)
			defer stop()
			width, color := terminal(stdout)
			text := &symbitest.TextPrinter{W: stdout, Sources: suite.Sources, Width: width, Color: color}
			report := suite.Run(ctx, runs, symbitest.RunOptions{
				Parallel: parallel, Update: update, RecordChunks: recordChunks, StateDir: stateD, LookupEnv: os.LookupEnv,
				OnResult: func(rr *symbitest.RunResult) {
					if jsonOut {
						_ = symbitest.WriteJSONResult(stdout, rr)
					} else {
						text.Result(rr)
					}
				},
			})
			if jsonOut {
				_ = symbitest.WriteJSONSummary(stdout, report)
			} else {
				text.Summary(report)
			}
			if junitFile != "" {
				if err := writeJUnit(junitFile, report, suite.Sources); err != nil {
					return exitWith(exitFailure, "-junit-xml: %v", err)
				}
			}
			if report.Status() > symbitest.Pass {
				return exitWith(exitChanged, "")
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&filters, "filter", nil, "run only the runs whose name, or whose file's path or name, matches this glob (repeatable)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object per run, and a summary, on standard output")
	cmd.Flags().StringVar(&junitFile, "junit-xml", "", "also write the results as JUnit XML to this file")
	cmd.Flags().IntVar(&parallel, "parallel", 0, "how many runs at once (default: the number of CPUs)")
	cmd.Flags().BoolVar(&update, "update", false, "record cassettes again from the live models where requests changed, and record missing ones")
	cmd.Flags().BoolVar(&recordChunks, "record-chunks", false, "with -update: keep the streamed chunks, with their timing, of what is recorded")
	cmd.Flags().StringVar(&stateD, "state-dir", "", "journal the runs here (default: each configuration's state_dir)")
	return cmd
}

// writeJUnit writes the report to path, making its directory, through a
// temporary file, so a CI step never reads half a report.
func writeJUnit(path string, report *symbitest.Report, sources map[string]*hcl.File) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".junit-*.xml")
	if err != nil {
		return err
	}
	err = symbitest.WriteJUnit(f, report, sources)
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

// terminal is the width of w and whether to colour it, when it is a
// terminal.
func terminal(w any) (uint, bool) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	width := 0
	if wd, _, err := term.GetSize(int(f.Fd())); err == nil {
		width = wd
	}
	return uint(width), os.Getenv("NO_COLOR") == ""
}
