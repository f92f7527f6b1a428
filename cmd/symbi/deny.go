package main

import "github.com/spf13/cobra"

func newDenyCmd() *cobra.Command {
	var f approvalFlags
	cmd := &cobra.Command{
		Use:   "deny ID",
		Short: "Deny a pending action",
		Long: `Refuse an action waiting in <state_dir>/approvals/ (list them with symbi
approve). The agent sees the denial, with --reason, as an observation.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.temporal.on() {
				return decideTemporal(cmd, &f.temporal, &f, args[0], false)
			}
			return decideRequest(cmd, &f, args[0], false)
		},
	}
	f.add(cmd)
	return cmd
}
