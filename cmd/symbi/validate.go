package main

import (
	"fmt"

	"github.com/spf13/cobra"
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

Diagnostics go to stderr with a source snippet; warnings do not fail.
Exit status: 0 valid, 2 invalid.`,
		Example: `  symbi validate                 # the *.hcl files of the current directory
  symbi validate examples/research.hcl
  symbi validate -json . | jq '.diagnostics[].summary'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				_, diags, err := compileConfig(cmd, pathArg(args), true)
				if err != nil {
					return err
				}
				if err := writeJSONDiags(cmd.OutOrStdout(), diags); err != nil {
					return err
				}
				if diags.HasErrors() {
					return exitWith(exitInvalid, "")
				}
				return nil
			}
			cfg, err := loadConfig(cmd, pathArg(args), true)
			if err != nil {
				return err
			}
			p := cfg.Plan
			fmt.Fprintf(cmd.OutOrStdout(), "The configuration is valid: %s, %s, %s.\n",
				count(len(p.Agents), "agent", "agents"), count(len(p.Tools), "tool", "tools"), count(len(p.Policies), "policy", "policies"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON (file, line, column) for editors")
	addVarFlags(cmd)
	return cmd
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
