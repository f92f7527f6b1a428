package main

import "github.com/spf13/cobra"

// Placeholder until the command lands; replaced by its own file's owner.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "validate",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(exitFailure, "symbi validate is not available in this build yet")
		},
	}
}
