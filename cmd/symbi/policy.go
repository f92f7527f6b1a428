package main

import "github.com/spf13/cobra"

// Placeholder until the command lands; replaced by its own file's owner.
func newPolicyCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "policy",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(exitFailure, "symbi policy is not available in this build yet")
		},
	}
}
