package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// LockFileName is the run's lock file inside its run directory. It holds
// the pid of the process that last took the lock, for the error a second
// process gets; the lock itself is the operating system's (lock_*.go).
const LockFileName = "lock"

// ErrLocked is wrapped by Lock's error when another process holds the
// run's lock: the run is still running, or is being resumed.
var ErrLocked = errors.New("the run is in use by another symbi process")

// RunLock is a run's exclusive lock, held by the process that writes the
// run's journal: the run itself from its first line to its last, or the
// resume that continues it. The operating system releases it when the
// process ends, however it ends, so a killed run leaves no stale lock.
type RunLock struct {
	stateDir, runID string
	f               *os.File
	once            sync.Once
	err             error
}

// Lock takes run runID's lock, creating the lock file in the run's
// directory (which must exist). It does not wait: when another process
// holds the lock the error wraps ErrLocked and names that process.
func Lock(stateDir, runID string) (*RunLock, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	path := filepath.Join(RunDir(stateDir, runID), LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		// The run's directory is not there (Create makes it first).
		return nil, fmt.Errorf("journal: no run %s in %s: %w", runID, stateDir, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: locking run %s: %w", runID, err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w%s: it is still running, or being resumed; wait for it to end (symbi runs lists it as running)", ErrLocked, holder(path))
		}
		return nil, fmt.Errorf("journal: locking run %s: %w", runID, err)
	}
	// The pid is a courtesy for the error above; the lock does not depend
	// on it, so failing to write it is not an error. Written at a fixed
	// width, it replaces any earlier holder's without a truncate.
	f.WriteAt(fmt.Appendf(nil, "%-20d\n", os.Getpid()), 0)
	return &RunLock{stateDir: stateDir, runID: runID, f: f}, nil
}

// holder names the process whose pid the lock file holds, if it reads as
// one.
func holder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 32 {
		return ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return ""
	}
	return fmt.Sprintf(" (pid %d)", pid)
}

// StateDir is the state directory of the locked run.
func (l *RunLock) StateDir() string { return l.stateDir }

// RunID is the locked run's id.
func (l *RunLock) RunID() string { return l.runID }

// Unlock releases the lock. Calling it again does nothing and returns the
// first call's error.
func (l *RunLock) Unlock() error {
	l.once.Do(func() {
		err := unlockFile(l.f)
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			l.err = fmt.Errorf("journal: unlocking run %s: %w", l.runID, err)
		}
	})
	return l.err
}

// Locked reports whether a process holds run runID's lock. On Linux it
// tests the lock without taking it; elsewhere it takes and releases it at
// once (lock_*.go), so a Lock at that very moment may fail spuriously. A
// run without a lock file (written by an older symbi) is not locked.
func Locked(stateDir, runID string) (bool, error) {
	if err := checkRunID(runID); err != nil {
		return false, err
	}
	f, err := os.Open(filepath.Join(RunDir(stateDir, runID), LockFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	locked, err := isLocked(f)
	if err != nil {
		return false, fmt.Errorf("journal: testing the lock of run %s: %w", runID, err)
	}
	return locked, nil
}

// errWouldBlock is what lockFile returns when another holder has the lock.
var errWouldBlock = errors.New("locked")
