package main

import "github.com/spf13/cobra"

// Placeholder until the command lands; replaced by its own file's owner.
func newRunsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "runs",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(exitFailure, "symbi runs is not available in this build yet")
		},
	}
}
