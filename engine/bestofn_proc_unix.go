//go:build unix

package engine

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts a command scorer in its own process group and
// kills the whole group when its context ends, so a scorer that forks
// cannot outlive its timeout.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
