package builtins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/plan"
)

// baseEnv is the environment a command tool (or a stdio MCP server) inherits
// from symbi; everything else must be listed in the block's env, so secrets
// in symbi's environment do not leak into tools by accident.
func baseEnv() []string { return []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"} }

// waitDelay bounds how long the output is drained after the tool's group was
// killed: a process that escaped the group (setsid) and inherited the pipes
// must not hang the call.
const waitDelay = 500 * time.Millisecond

// maxStderr is how much of a tool's stderr is kept (its tail) for messages.
const maxStderr = 2048

func (tb *Toolbox) environ(extra map[string]plan.String) ([]string, error) {
	var env []string
	for _, k := range baseEnv() {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, s := range extra {
		v, err := tb.resolve(s)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

func (tb *Toolbox) argv(list []plan.String) ([]string, error) {
	if len(list) == 0 {
		return nil, errors.New("empty argv")
	}
	out := make([]string, len(list))
	for i, s := range list {
		v, err := tb.resolve(s)
		if err != nil {
			return nil, fmt.Errorf("argv[%d]: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// commandDir resolves a command's dir against the configuration directory,
// and a relative program path ("./tools/x.sh") against that dir.
func (tb *Toolbox) commandDir(dir string, argv []string) string {
	d := tb.opts.BaseDir
	if dir != "" {
		if filepath.IsAbs(dir) {
			d = dir
		} else {
			d = filepath.Join(tb.opts.BaseDir, dir)
		}
	}
	if strings.ContainsRune(argv[0], filepath.Separator) && !filepath.IsAbs(argv[0]) {
		argv[0] = filepath.Join(d, argv[0])
		if !filepath.IsAbs(argv[0]) {
			if abs, err := filepath.Abs(argv[0]); err == nil {
				argv[0] = abs
			}
		}
	}
	return d
}

// commandRun runs a process without a shell: arguments as JSON on stdin,
// stdout as the result, the call's idempotency key in IdempotencyEnv. The
// process leads its own process group, and the whole group is killed on
// timeout, on cancellation, when stdout passes the cap, and after the
// process exits (children left running are not the tool's result); on
// Linux the process is also killed when symbi dies (see launcher).
func (tb *Toolbox) commandRun(c plan.CommandExec) runFunc {
	return func(ctx context.Context, args json.RawMessage, limit int) (string, cut, error) {
		argv, err := tb.argv(c.Argv)
		if err != nil {
			return "", cut{}, fail(Error, "", err)
		}
		env, err := tb.environ(c.Env)
		if err != nil {
			return "", cut{}, fail(Error, "", err)
		}
		dir := tb.commandDir(c.Dir, argv)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if key := idempotencyKeyOf(ctx); key != "" {
			env = append(env, IdempotencyEnv+"="+key)
		}
		for k, v := range traceContext(ctx) {
			env = append(env, strings.ToUpper(k)+"="+v) // TRACEPARENT, TRACESTATE
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(args)
		tb.launch.prepare(cmd)
		killGroup := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.Cancel = killGroup
		cmd.WaitDelay = waitDelay
		stdout := &capWriter{limit: limit, onOverflow: func() { _ = killGroup() }}
		stderr := &tailWriter{max: maxStderr}
		// Our own pipes rather than exec's copying goroutines, so Wait
		// returns when the tool exits even if a child still holds stdout;
		// the group is killed then, which closes the pipes.
		outR, outW, err := os.Pipe()
		if err != nil {
			return "", cut{}, fail(Error, "", err)
		}
		errR, errW, err := os.Pipe()
		if err != nil {
			outR.Close()
			outW.Close()
			return "", cut{}, fail(Error, "", err)
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		err = tb.launch.start(cmd)
		outW.Close()
		errW.Close()
		if err != nil {
			outR.Close()
			errR.Close()
			return "", cut{}, fail(Error, "", fmt.Errorf("start %s: %w", filepath.Base(argv[0]), err))
		}
		drained := make(chan struct{})
		go func() {
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(stdout, outR) }()
			go func() { defer wg.Done(); _, _ = io.Copy(stderr, errR) }()
			wg.Wait()
			close(drained)
		}()
		werr := cmd.Wait()
		_ = killGroup()
		select {
		case <-drained:
		case <-time.After(waitDelay):
			// A process that left the group (setsid) still holds a pipe:
			// stop reading rather than hang.
		}
		outR.Close()
		errR.Close()
		<-drained
		out, over := stdout.result()
		if over {
			// The cap was reached: the output so far is the (bounded) result.
			return out, cutAt(0), nil
		}
		if ctx.Err() != nil {
			return "", cut{}, fail(Timeout, "", fmt.Errorf("killed with its process group: %w%s", ctx.Err(), stderrSuffix(stderr.String())))
		}
		var ee *exec.ExitError
		switch {
		case werr == nil, errors.Is(werr, exec.ErrWaitDelay):
			// ErrWaitDelay: the tool exited 0, but a child kept its stdin
			// open without reading the arguments; the answer stands.
			return out, cut{}, nil
		case errors.As(werr, &ee):
			code := ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			return "", cut{}, fail(Error, "", &ExitError{Code: code, Stderr: stderr.String()})
		default:
			return "", cut{}, fail(Error, "", werr)
		}
	}
}

func stderrSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}

// capWriter keeps up to limit bytes and reports the overflow once; beyond
// the cap it discards, so memory stays bounded while the process is killed.
type capWriter struct {
	limit      int
	onOverflow func()

	mu   sync.Mutex
	buf  bytes.Buffer
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return len(p), nil
	}
	if room := w.limit - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:room])
		w.over = true
		w.onOverflow()
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}

func (w *capWriter) result() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return cutUTF8(w.buf.String()), true
	}
	return w.buf.String(), false
}

// cutUTF8 drops a rune the cap cut in half.
func cutUTF8(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.ValidString(s); i++ {
		s = s[:len(s)-1]
	}
	return s
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	max int

	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(w.buf), ""))
}
