package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/plan"
)

func newPlanCmd() *cobra.Command {
	var asJSON bool
	var out string
	cmd := &cobra.Command{
		Use:   "plan [PATH]",
		Short: "Compile a configuration and print its execution plan",
		Long: `Plan compiles a configuration into its execution plan and prints it as a
readable tree (every reference resolved, every default filled, every file
hashed), or as canonical JSON with -json. Two compilations of the same files
give byte-identical output on any machine, so plans can be golden-tested and
their diffs reviewed.

-out FILE saves the canonical JSON; symbi run accepts the saved file.
Exit status: 0 planned, 2 invalid.`,
		Example: `  symbi plan examples/research.hcl
  symbi plan -json . > plan.json
  symbi plan -out plan.json --var question="What is 6 * 7?" .`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd, pathArg(args), false)
			if err != nil {
				return err
			}
			data, err := plan.Encode(cfg.Plan)
			if err != nil {
				return exitWith(exitFailure, "encoding the plan: %v", err)
			}
			if out != "" {
				if err := os.WriteFile(out, data, 0o644); err != nil {
					return exitWith(exitFailure, "saving the plan: %v", err)
				}
			}
			if asJSON {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			if out != "" {
				cmd.PrintErrf("Saved the plan to %s.\n", out)
				return nil
			}
			return plan.WriteTree(cmd.OutOrStdout(), cfg.Plan)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the canonical JSON form")
	cmd.Flags().StringVar(&out, "out", "", "save the canonical JSON plan to `FILE`")
	addVarFlags(cmd)
	return cmd
}
