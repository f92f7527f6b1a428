package journal

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/windows"
)

// On Windows the run lock is LockFileEx, exclusive and failing at once,
// on the lock file's whole range. Windows releases it when the process
// ends. It cannot be tested without being taken, so isLocked takes it and
// releases it at once: a Lock at that very moment fails as if the run were
// running.

func lockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, math.MaxUint32, math.MaxUint32, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errWouldBlock
	}
	return err
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, math.MaxUint32, math.MaxUint32, &ol)
}

func isLocked(f *os.File) (bool, error) {
	switch err := lockFile(f); {
	case errors.Is(err, errWouldBlock):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, unlockFile(f)
}
