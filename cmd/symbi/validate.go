package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/lockfile"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/symbitest"
)

func newValidateCmd() *cobra.Command {
	var asJSON, locked bool
	cmd := &cobra.Command{
		Use:   "validate [PATH]",
		Short: "Check a configuration: syntax, references, types, policies",
		Long: `Validate parses and compiles a configuration without running it: syntax,
references (with "did you mean" suggestions), types, enum values, durations,
Rego modules and queries, Cedar policies against their schema, JSON Schemas,
budgets and cycles. Variables without a value are treated as unknown values of
their declared type, so validate needs no inputs.

Test files are checked too: PATH's own when it is a test file
(*.symbitest.hcl), X.symbitest.hcl beside a configuration file X.hcl, and
those in a directory and its tests/ directory: their references (agents,
tools, MCP servers), types (every assertion's condition against the run's
result), cassettes and scripts.

A configuration with MCP servers and no lock file gets a warning that its
tools are not pinned (see symbi lock). --locked also starts every MCP server
and resolves every command tool, and checks them against the lock file as a
run does: drift (a tool whose definition changed, a tool that appeared, a
server launched differently) is an error, shown as a diff.

Diagnostics go to stderr with a source snippet; warnings do not fail.
Exit status: 0 valid, 2 invalid (or, with --locked, drifted from the lock
file), 4 a server that cannot start.`,
		Example: `  symbi validate                 # the *.hcl files of the current directory
  symbi validate examples/research.hcl
  symbi validate --locked .      # and the servers' tools against symbi.lock.hcl
  symbi validate -json . | jq '.diagnostics[].summary'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := pathArg(args)
			tests := testFilesOf(path)
			if lang.IsTestFile(path) {
				return validateTests(cmd, tests, asJSON)
			}
			if asJSON {
				cfg, diags, err := compileConfig(cmd, path, true)
				if err != nil {
					return err
				}
				if cfg != nil && !diags.HasErrors() {
					diags = append(diags, unpinned(cfg)...)
				}
				if len(tests) > 0 && !diags.HasErrors() {
					_, tdiags := symbitest.Load(cmd.Context(), tests, symbitest.LoadOptions{Validate: true, LookupEnv: os.LookupEnv, SymbiVersion: version})
					diags = append(diags, tdiags...)
				}
				if err := writeJSONDiags(cmd.OutOrStdout(), diags); err != nil {
					return err
				}
				if diags.HasErrors() {
					return exitWith(exitInvalid, "")
				}
				return nil
			}
			cfg, err := loadConfig(cmd, path, true)
			if err != nil {
				return err
			}
			printDiags(cmd.ErrOrStderr(), cfg.Files, unpinned(cfg))
			p := cfg.Plan
			if locked {
				if err := checkLocked(cmd, cfg); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "The configuration is valid: %s, %s, %s.\n",
				count(len(p.Agents), "agent", "agents"), count(len(p.Tools), "tool", "tools"), count(len(p.Policies), "policy", "policies"))
			if locked {
				fmt.Fprintf(cmd.OutOrStdout(), "Its servers and command tools match %s.\n", p.Lock.File)
			}
			if len(tests) > 0 {
				return validateTests(cmd, tests, false)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON (file, line, column) for editors")
	cmd.Flags().BoolVar(&locked, "locked", false, "also start the MCP servers and check them and the command tools against the lock file")
	addVarFlags(cmd)
	return cmd
}

// testFilesOf are the test files validate checks with PATH: PATH itself,
// X.symbitest.hcl beside a configuration file X.hcl, or the test files of
// a directory and of its tests/ directory.
func testFilesOf(path string) []string {
	if lang.IsTestFile(path) {
		return []string{path}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		tf := strings.TrimSuffix(path, filepath.Ext(path)) + lang.TestFileSuffix
		if _, err := os.Stat(tf); err == nil {
			return []string{tf}
		}
		return nil
	}
	var out []string
	for _, dir := range []string{path, filepath.Join(path, "tests")} {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+lang.TestFileSuffix))
		out = append(out, m...)
	}
	return out
}

// validateTests checks test files as symbi test does before it runs them,
// with variables that have no value unknown.
func validateTests(cmd *cobra.Command, files []string, asJSON bool) error {
	suite, diags := symbitest.Load(cmd.Context(), files, symbitest.LoadOptions{Validate: true, LookupEnv: os.LookupEnv, SymbiVersion: version})
	if asJSON {
		if err := writeJSONDiags(cmd.OutOrStdout(), diags); err != nil {
			return err
		}
	} else {
		printDiags(cmd.ErrOrStderr(), suite.Sources, diags)
	}
	if diags.HasErrors() {
		return exitWith(exitInvalid, "")
	}
	if !asJSON {
		runs := 0
		for _, f := range suite.Files {
			runs += len(f.Runs)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "The tests are valid: %s, %s.\n", count(len(suite.Files), "test file", "test files"), count(runs, "run", "runs"))
	}
	return nil
}

// unpinned warns of each MCP server of a configuration without a lock
// file: a server can change its tools between runs unnoticed.
func unpinned(cfg *interp.Config) hcl.Diagnostics {
	if cfg.Plan.Lock != nil {
		return nil
	}
	var diags hcl.Diagnostics
	for _, s := range cfg.Plan.MCPServers {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Tools are not pinned",
			Detail: fmt.Sprintf("%s has no lock file (%s), so nothing checks that its tools are what they were: a server can change a tool's description, schema or annotations between runs and the agent follows the new text. Run \"symbi lock\" and commit the file it writes.",
				s.Address, filepath.Base(cfg.LockFile)),
			Subject: hclRange(cfg, s.Range),
		})
	}
	return diags
}

// hclRange is a plan range as the diagnostics of its compile named it,
// with the byte offset the snippet needs.
func hclRange(cfg *interp.Config, r plan.Range) *hcl.Range {
	name := filepath.Join(cfg.BaseDir, filepath.FromSlash(r.Filename))
	pos := hcl.Pos{Line: r.Line, Column: r.Column}
	if f := cfg.Files[name]; f != nil {
		line := 1
		for i, c := range f.Bytes {
			if line == r.Line {
				pos.Byte = i + r.Column - 1
				break
			}
			if c == '\n' {
				line++
			}
		}
	}
	return &hcl.Range{Filename: name, Start: pos, End: pos}
}

// checkLocked starts the servers and checks them, and the command tools,
// against the lock file: drift is an error, any other difference a note.
func checkLocked(cmd *cobra.Command, cfg *interp.Config) error {
	if cfg.Plan.Lock == nil {
		return exitWith(exitInvalid, "--locked: %s does not exist; run symbi lock to pin the tools", cfg.LockFile)
	}
	now, warnings, err := pinned(cmd, cfg)
	if err != nil {
		return err
	}
	errw := cmd.ErrOrStderr()
	for _, w := range warnings {
		fmt.Fprintf(errw, "Warning: %s\n", w)
	}
	var drift, other []lockfile.Change
	for _, c := range lockfile.Diff(cfg.Plan.Lock, now) {
		if c.Drift() {
			drift = append(drift, c)
		} else {
			other = append(other, c)
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(errw, "Warning: %s is out of date (a run does not refuse these; symbi lock -update records them):\n%s", cfg.Plan.Lock.File, indentReport(other))
	}
	if len(drift) > 0 {
		fmt.Fprintf(errw, "%s: the tools differ from what it pins:\n%s", cfg.Plan.Lock.File, indentReport(drift))
		return exitWith(exitInvalid, "%s from %s, which a run refuses unless on_drift says otherwise; review, then symbi lock -update", count(len(drift), "drift", "drifts"), cfg.Plan.Lock.File)
	}
	return nil
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
