package journal

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// On Linux the run lock is an open file description lock (fcntl
// F_OFD_SETLK) on the whole lock file: like flock it belongs to the open
// file, so two opens conflict even within one process, and it is released
// when the process ends; unlike flock it can be tested without being taken
// (F_OFD_GETLK), so `symbi runs` never makes a resume fail by looking.

func lockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return errWouldBlock
	}
	return err
}

func unlockFile(f *os.File) error {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart}
	return unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

func isLocked(f *os.File) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}
