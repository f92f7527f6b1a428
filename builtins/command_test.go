package builtins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

func commandTool(name string, env map[string]string, argv ...string) plan.Tool {
	c := &plan.CommandExec{Dir: "tools", Env: map[string]plan.String{}}
	for _, a := range argv {
		c.Argv = append(c.Argv, plan.Lit(a))
	}
	for k, v := range env {
		c.Env[k] = plan.Lit(v)
	}
	return plan.Tool{Address: "tool." + name, Executor: plan.Executor{Kind: "command", Command: c}, Effect: "read", Timeout: plan.Duration(10 * time.Second)}
}

func TestCommandEchoesArgumentsFromStdin(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{commandTool("echo", nil, "./echo_args.sh")}, nil, Options{BaseDir: testdataDir(t)})
	r, err := tb.Call(context.Background(), approve(t, tb, "echo", `{"query":"otters"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != `{"query":"otters"}` || r.Truncated || r.Tool != "echo" {
		t.Errorf("result %+v", r)
	}
}

func TestCommandEnvironmentIsAnAllowList(t *testing.T) {
	t.Setenv("SYMBI_TEST_SECRET", "hunter2")
	t.Setenv("LANG", "C.UTF-8")
	tool := commandTool("env", map[string]string{"GREETING": "hello"}, "./env.sh")
	tool.Executor.Command.Env["TOKEN"] = plan.String{Deferred: &plan.Expr{Source: `env("DIR_TOKEN")`}}
	resolved := 0
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{
		BaseDir: testdataDir(t),
		Resolve: func(s plan.String) (string, error) {
			resolved++
			if s.Deferred.Source != `env("DIR_TOKEN")` {
				t.Errorf("resolving %q", s.Deferred.Source)
			}
			return "tok-123", nil
		},
	})
	r, err := tb.Call(context.Background(), approve(t, tb, "env", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GREETING=hello", "LANG=C.UTF-8", "TOKEN=tok-123", "PATH="} {
		if !strings.Contains(r.Content, want+"") {
			t.Errorf("environment lacks %s:\n%s", want, r.Content)
		}
	}
	if strings.Contains(r.Content, "hunter2") {
		t.Errorf("a variable outside the allow-list leaked into the tool:\n%s", r.Content)
	}
	if resolved != 1 {
		t.Errorf("deferred env resolved %d times, want once per call", resolved)
	}
}

func TestCommandNonZeroExit(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{commandTool("fail", nil, "./fail.sh")}, nil, Options{BaseDir: testdataDir(t)})
	_, err := tb.Call(context.Background(), approve(t, tb, "fail", `{}`))
	wantKind(t, err, Error)
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("%v is not an *ExitError", err)
	}
	if ee.Code != 3 || !strings.Contains(ee.Stderr, "disk on fire") {
		t.Errorf("exit error %+v", ee)
	}
}

func TestCommandGigabytesAreCutAtTheCap(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	tool := commandTool("big", map[string]string{"PIDFILE": pidfile}, "./gigabytes.sh")
	tool.MaxOutputBytes = 64 << 10
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{BaseDir: testdataDir(t)})
	r, err := tb.Call(context.Background(), approve(t, tb, "big", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || len(r.Content) != 64<<10 || strings.Trim(r.Content, "x") != "" {
		t.Errorf("truncated=%v len=%d", r.Truncated, len(r.Content))
	}
	// The tool was stopped at the cap: how much more it had is not known,
	// and the note says so rather than guess.
	if r.Size != 0 || !strings.Contains(r.TruncationNote(), "the first 65536 bytes are shown; the tool was stopped there") {
		t.Errorf("size %d, note %q", r.Size, r.TruncationNote())
	}
	waitGone(t, pidfile, 2)
}

func TestCommandHangIsKilledWithItsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	tool := commandTool("hang", map[string]string{"PIDFILE": pidfile}, "./hang.sh")
	tool.Timeout = plan.Duration(300 * time.Millisecond)
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{BaseDir: testdataDir(t)})
	_, err := tb.Call(context.Background(), approve(t, tb, "hang", `{}`))
	f := wantKind(t, err, Timeout)
	if !errors.Is(f, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	waitGone(t, pidfile, 2)
}

func TestCommandForkedChildrenDoNotOutliveTheCall(t *testing.T) {
	for _, mode := range []string{"exit", "wait"} {
		t.Run(mode, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pids")
			tool := commandTool("forker", map[string]string{"PIDFILE": pidfile, "MODE": mode}, "./forker.sh")
			tool.Timeout = plan.Duration(300 * time.Millisecond)
			tb := newToolbox(t, []plan.Tool{tool}, nil, Options{BaseDir: testdataDir(t)})
			r, err := tb.Call(context.Background(), approve(t, tb, "forker", `{}`))
			if mode == "exit" {
				// The tool answered and exited; its children held stdout.
				if err != nil || strings.TrimSpace(r.Content) != "forked" {
					t.Fatalf("result %+v, err %v", r, err)
				}
			} else {
				wantKind(t, err, Timeout)
			}
			waitGone(t, pidfile, 2)
		})
	}
}

func TestCommandCancelledByCaller(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	tb := newToolbox(t, []plan.Tool{commandTool("hang", map[string]string{"PIDFILE": pidfile}, "./hang.sh")}, nil, Options{BaseDir: testdataDir(t)})
	ctx, cancel := context.WithCancel(context.Background())
	call := approve(t, tb, "hang", `{}`)
	go func() {
		// Cancel once the script has written its pid, i.e. is running.
		for {
			if b, _ := os.ReadFile(pidfile); len(strings.Fields(string(b))) >= 2 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := tb.Call(ctx, call)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	waitGone(t, pidfile, 2)
}

func TestCommandMissingProgram(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{commandTool("nope", nil, "./does_not_exist.sh")}, nil, Options{BaseDir: testdataDir(t)})
	_, err := tb.Call(context.Background(), approve(t, tb, "nope", `{}`))
	wantKind(t, err, Error)
	if !strings.Contains(err.Error(), "start does_not_exist.sh") {
		t.Errorf("error %q", err)
	}
}

func TestCommandThatIgnoresLargeArguments(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	tool := commandTool("ignore", map[string]string{"PIDFILE": pidfile}, "sh", "-c", `sleep 300 & echo $! > "$PIDFILE"; echo done`)
	tool.Executor.Command.Dir = ""
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{BaseDir: testdataDir(t)})
	// 1 MiB of arguments, more than a pipe holds, that nobody reads; a child
	// keeps stdin open.
	big := `{"blob":"` + strings.Repeat("a", 1<<20) + `"}`
	r, err := tb.Call(context.Background(), approve(t, tb, "ignore", big))
	if err != nil || strings.TrimSpace(r.Content) != "done" {
		t.Fatalf("%q %v", r.Content, err)
	}
	waitGone(t, pidfile, 1)
}
