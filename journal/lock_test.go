package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLockIsExclusive: one holder at a time, even within one process; the
// refusal names the holder; Locked tests without taking; Unlock is
// idempotent and frees the run.
func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(RunDir(dir, "r"), 0o700)
	if locked, err := Locked(dir, "r"); locked || err != nil {
		t.Fatalf("a run without a lock file: locked %v, %v", locked, err)
	}
	l, err := Lock(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir, "r")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d)", os.Getpid())) {
		t.Errorf("second Lock: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	for range 3 {
		// Looking must not take the lock from anyone, nor keep it.
		if locked, err := Locked(dir, "r"); !locked || err != nil {
			t.Errorf("held lock: locked %v, %v", locked, err)
		}
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
	if locked, err := Locked(dir, "r"); locked || err != nil {
		t.Errorf("released lock: locked %v, %v", locked, err)
	}
	l2, err := Lock(dir, "r")
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	l2.Unlock()
	if st, err := os.Stat(filepath.Join(RunDir(dir, "r"), LockFileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, %v", st, err)
	}
	if _, err := Lock(dir, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lock of a missing run: %v", err)
	}
	if _, err := Lock(dir, "../r"); err == nil {
		t.Error("Lock accepted a run id with a slash")
	}
}

// TestLockRace: of many goroutines taking one run's lock at once, exactly
// one gets it.
func TestLockRace(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(RunDir(dir, "r"), 0o700)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		held  []*RunLock
		other []error
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Lock(dir, "r")
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				held = append(held, l)
			} else if !errors.Is(err, ErrLocked) {
				other = append(other, err)
			}
		}()
	}
	wg.Wait()
	if len(held) != 1 || len(other) != 0 {
		t.Errorf("%d holders, other errors %v; want exactly one holder", len(held), other)
	}
	for _, l := range held {
		l.Unlock()
	}
}

// TestWriterHoldsTheLock: a journal's writer holds its run from Create (or
// OpenAppend) to Close, and a refused OpenAppend leaves the caller's lock
// with the caller.
func TestWriterHoldsTheLock(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	w.Append(Event{Type: Started})
	if locked, _ := Locked(dir, "r"); !locked {
		t.Error("Create did not lock the run")
	}
	if _, err := OpenAppend(dir, "r", SyncBackground); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenAppend of a run being written: %v, want ErrLocked", err)
	}
	if _, err := Lock(dir, "r"); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock of a run being written: %v, want ErrLocked", err)
	}
	w.Close()
	if locked, _ := Locked(dir, "r"); locked {
		t.Error("Close did not release the run")
	}

	l, err := Lock(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenAppend(dir, "r", SyncBackground); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenAppend without the lock another holder has: %v", err)
	}
	w2, err := OpenAppend(dir, "r", SyncBackground, WithLock(l))
	if err != nil {
		t.Fatal(err)
	}
	w2.Append(Event{Type: Terminated})
	w2.Close()
	if locked, _ := Locked(dir, "r"); locked {
		t.Error("the writer did not release the lock it was given")
	}

	os.WriteFile(Path(dir, "r"), []byte("{broken}\n"), 0o600)
	l, err = Lock(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if _, err := OpenAppend(dir, "r", SyncBackground, WithLock(l)); err == nil {
		t.Fatal("OpenAppend of a broken journal succeeded")
	}
	if locked, _ := Locked(dir, "r"); !locked {
		t.Error("a failed OpenAppend released the caller's lock")
	}
	other, _ := Lock(dir, "r")
	if other != nil {
		t.Error("a second Lock succeeded while the caller holds the run")
		other.Unlock()
	}
	os.MkdirAll(RunDir(dir, "s"), 0o700)
	if _, err := OpenAppend(dir, "s", SyncBackground, WithLock(l)); err == nil || !strings.Contains(err.Error(), "lock given") {
		t.Errorf("OpenAppend with another run's lock: %v", err)
	}
}

// TestListRunsStatuses: a run whose lock is held is running, one whose
// chain is broken is tampered, and an unsigned one is listed as it reads,
// marked unsigned.
func TestListRunsStatuses(t *testing.T) {
	dir := t.TempDir()
	live := mustCreate(t, dir, "live", SyncBackground)
	live.Append(Event{Type: Started})
	killed := mustCreate(t, dir, "killed", SyncBackground)
	killed.Append(Event{Type: Started})
	killed.Close()
	bad := mustCreate(t, dir, "bad", SyncBackground)
	bad.Append(Event{Type: Started})
	bad.Append(Event{Type: ToolResult})
	bad.Close()
	b := readString(t, bad.Path())
	os.WriteFile(bad.Path(), []byte(strings.Replace(b, `"event":"tool_result"`, `"event":"tool_resulT"`, 1)), 0o600)
	os.MkdirAll(RunDir(dir, "old"), 0o700)
	os.WriteFile(Path(dir, "old"), []byte(line(1, Started)+line(2, Terminated)), 0o600)

	runs, err := ListRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]RunSummary{}
	for _, r := range runs {
		got[r.ID] = r
	}
	if s := got["live"].Status; s != StatusRunning {
		t.Errorf("a run being written: status %q, want running", s)
	}
	if s := got["killed"].Status; s != StatusIncomplete {
		t.Errorf("a killed run: status %q, want incomplete", s)
	}
	if r := got["bad"]; r.Status != StatusTampered || !strings.Contains(r.Error, "line 2") {
		t.Errorf("a tampered run: %+v", r)
	}
	if r := got["old"]; !r.Unsigned || r.Events != 2 || r.Status != StatusIncomplete {
		// line() writes terminated without data: the status stays incomplete.
		t.Errorf("an unsigned run: %+v", r)
	}
	live.Close()
}
