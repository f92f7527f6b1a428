//go:build !linux

package builtins

import (
	"os/exec"
	"syscall"
)

// launcher starts the toolbox's child processes each in a process group of
// its own. Outside Linux there is no parent-death signal: the group is
// killed on timeout, cancellation, output cap, exit and Toolbox.Close, but
// a symbi that is killed (SIGKILL) leaves a running tool behind.
type launcher struct{}

func (l *launcher) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func (l *launcher) start(cmd *exec.Cmd) error { return cmd.Start() }

func (l *launcher) do(f func()) error {
	f()
	return nil
}

func (l *launcher) close() {}
