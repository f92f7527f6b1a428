package main

import "github.com/spf13/cobra"

// Placeholder until the command lands; replaced by its own file's owner.
func newDenyCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "deny",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(exitFailure, "symbi deny is not available in this build yet")
		},
	}
}
