//go:build !unix

package main

import (
	"errors"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"
)

func childAttr() *syscall.SysProcAttr { return nil }

// execTemporal runs symbi-temporal to its end with this process's streams.
func execTemporal(cmd *cobra.Command, bin string, argv []string) error {
	c := exec.Command(bin, argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return exitWith(ee.ExitCode(), "")
	}
	return err
}
