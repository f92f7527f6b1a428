//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package journal

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// On macOS and the BSDs the run lock is flock(2) on the lock file,
// exclusive and non-blocking. It belongs to the open file and is released
// when the process ends. It cannot be tested without being taken, so
// isLocked takes a shared lock and releases it at once: a Lock at that very
// moment fails as if the run were running.

func lockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}

func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

func isLocked(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
