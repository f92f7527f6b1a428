package main

import "github.com/spf13/cobra"

// Placeholder until the command lands; replaced by its own file's owner.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(exitFailure, "symbi run is not available in this build yet")
		},
	}
}
