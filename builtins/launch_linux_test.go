//go:build linux

package builtins

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLauncherChildOutlivesTheCallersThread is golang/go#27505 as a test:
// a child started from a goroutine whose thread then ends gets its
// parent-death signal although symbi lives on, while a child started
// through the launcher from that same goroutine lives on.
func TestLauncherChildOutlivesTheCallersThread(t *testing.T) {
	var l launcher
	t.Cleanup(l.close)
	direct := exec.Command("sleep", "60")
	launched := exec.Command("sleep", "60")
	l.prepare(direct)
	l.prepare(launched)
	errs := make(chan error, 2)
	work := func() {
		// Locked and never unlocked: the runtime ends this thread when the
		// goroutine returns.
		runtime.LockOSThread()
		errs <- direct.Start()
		errs <- l.start(launched)
	}
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() != syscall.Getpid() {
			work()
			return
		}
		// The main thread is never ended, only parked: hand the work to a
		// goroutine that cannot run on it while this one holds it.
		done := make(chan struct{})
		go func() { defer close(done); work() }()
		<-done
		runtime.UnlockOSThread()
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		direct.Process.Kill()
		launched.Process.Kill()
		direct.Wait()
		launched.Wait()
	})
	waitFor(t, "the child started from the ended thread to die", func() bool { return processGone(direct.Process.Pid) })
	// The launched child may still be starting (exec, not yet asleep) when
	// the direct one is gone: it must come to sleep, which a child killed
	// with the caller's thread never does.
	waitFor(t, "the launched child to sleep (it was killed with the caller's thread?)", func() bool { return sleeping(launched.Process.Pid) })
	l.close()
	if err := l.start(exec.Command("true")); err == nil {
		t.Error("a closed launcher started a process")
	}
}

// waitFor polls cond, bounded: the kill it waits for is asynchronous.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sleeping reports whether pid is asleep (as sleep 60 is) with no SIGKILL
// on its way: a process that is being killed is not.
func sleeping(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	state, killed := "", false
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			state = v
		case "SigPnd", "ShdPnd":
			mask, _ := strconv.ParseUint(v, 16, 64)
			killed = killed || mask&(1<<(syscall.SIGKILL-1)) != 0
		}
	}
	return strings.HasPrefix(state, "S") && !killed
}
