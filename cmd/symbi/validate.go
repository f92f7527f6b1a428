package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/symbitest"
)

func newValidateCmd() *cobra.Command {
	var asJSON bool
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

Diagnostics go to stderr with a source snippet; warnings do not fail.
Exit status: 0 valid, 2 invalid.`,
		Example: `  symbi validate                 # the *.hcl files of the current directory
  symbi validate examples/research.hcl
  symbi validate -json . | jq '.diagnostics[].summary'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := pathArg(args)
			tests := testFilesOf(path)
			if lang.IsTestFile(path) {
				return validateTests(cmd, tests, asJSON)
			}
			if asJSON {
				_, diags, err := compileConfig(cmd, path, true)
				if err != nil {
					return err
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
			p := cfg.Plan
			fmt.Fprintf(cmd.OutOrStdout(), "The configuration is valid: %s, %s, %s.\n",
				count(len(p.Agents), "agent", "agents"), count(len(p.Tools), "tool", "tools"), count(len(p.Policies), "policy", "policies"))
			if len(tests) > 0 {
				return validateTests(cmd, tests, false)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON (file, line, column) for editors")
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

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
