package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/symbi-dev/symbi/plan"
)

// version is set at link time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the symbi version and the plan format it writes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "symbi %s (plan format %d)\n", symbiVersion(), plan.FormatVersion)
			return nil
		},
	}
}

// symbiVersion is the version of this binary: the module's, when it was
// built from a tagged module, else the one set at link time.
func symbiVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return version
}
