package main

import "github.com/spf13/cobra"

// Placeholder until the command lands; replaced by its own file's owner.
func newApproveCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "approve",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(exitFailure, "symbi approve is not available in this build yet")
		},
	}
}
