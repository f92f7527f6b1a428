//go:build unix

package main

import (
	"os"
	"syscall"

	"github.com/spf13/cobra"
)

// childAttr puts symbi-temporal in a process group of its own.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// execTemporal replaces this process with symbi-temporal: signals reach
// the worker directly.
func execTemporal(_ *cobra.Command, bin string, argv []string) error {
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		return exitWith(exitFailure, "running %s: %v", bin, err)
	}
	return nil
}
