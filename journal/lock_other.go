//go:build !linux && !windows && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package journal

import (
	"fmt"
	"os"
	"runtime"
)

// Elsewhere (Solaris, AIX, Plan 9, WebAssembly, …) symbi has no run lock,
// and refuses to write journals rather than let two processes write one.

func lockFile(*os.File) error {
	return fmt.Errorf("run locks are not implemented on %s", runtime.GOOS)
}

func unlockFile(*os.File) error { return nil }

func isLocked(*os.File) (bool, error) { return false, nil }
