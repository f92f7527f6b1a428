//go:build linux

package builtins

import (
	"errors"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// launcher starts the toolbox's child processes (command tools, stdio MCP
// servers) each in a process group of its own and with a parent-death
// signal: the kernel sends SIGKILL to a child when its parent dies, so a
// tool cannot outlive a symbi that was killed and had no chance to stop it.
//
// Linux delivers that signal when the *thread* that forked the child exits,
// not the process (golang/go#27505), and the Go runtime may retire threads.
// So every child is started from one goroutine that keeps its OS thread
// locked for as long as the toolbox lives, and the thread cannot end before
// close stops that goroutine or the process dies. Toolbox.Close does not
// rely on the thread's end to stop children (it stops its MCP servers
// itself, and a command tool ends with its call); when the runtime does end
// the thread then, a straggler gets its signal too.
type launcher struct {
	mu     sync.Mutex
	reqs   chan func()
	stop   chan struct{}
	closed bool
}

// errLauncherClosed is the cause of a start after Toolbox.Close.
var errLauncherClosed = errors.New("the toolbox is closed")

// prepare sets what every child of the toolbox needs before Start.
func (l *launcher) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// start runs cmd.Start on the launcher's thread.
func (l *launcher) start(cmd *exec.Cmd) error {
	var err error
	if lerr := l.do(func() { err = cmd.Start() }); lerr != nil {
		return lerr
	}
	return err
}

// do runs f on the launcher's locked thread and returns when f has
// returned. f must not block for long: every start waits for the one
// before.
func (l *launcher) do(f func()) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errLauncherClosed
	}
	if l.reqs == nil {
		l.reqs, l.stop = make(chan func()), make(chan struct{})
		go serveLocked(l.reqs, l.stop)
	}
	reqs, stop := l.reqs, l.stop
	l.mu.Unlock()
	done := make(chan struct{})
	select {
	case reqs <- func() { defer close(done); f() }:
	case <-stop:
		return errLauncherClosed
	}
	<-done
	return nil
}

// serveLocked runs requests on a thread it never unlocks: when it returns,
// the runtime ends the thread with it.
func serveLocked(reqs <-chan func(), stop <-chan struct{}) {
	runtime.LockOSThread()
	for {
		select {
		case f := <-reqs:
			f()
		case <-stop:
			return
		}
	}
}

// close stops the launcher's goroutine. The runtime then ends its locked
// thread (or parks it, if it is the main thread), and children started
// from it that still run get their parent-death signal.
func (l *launcher) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if l.stop != nil {
		close(l.stop)
	}
}
