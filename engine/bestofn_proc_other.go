//go:build !unix

package engine

import "os/exec"

// setProcessGroup: without process groups, the context kills the scorer itself.
func setProcessGroup(cmd *exec.Cmd) {}
