package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmuxHangLimit is how long a terminal test may take before it is called
// hung: it detects hangs on a loaded machine, it is not a speed
// requirement (each wait returns as soon as the screen shows what it waits
// for).
const tmuxHangLimit = 3 * time.Minute

// replOnTmux starts `symbi repl .` in dir on a tmux terminal (prefix goes
// before the command, e.g. an env assignment) and returns how to type
// (literal text, then named keys) and how to wait for the screen to match.
// It skips the test when tmux or symbi is missing.
func replOnTmux(t *testing.T, ctx context.Context, dir, prefix string) (keys func(literal string, then ...string), waitFor func(what string, re *regexp.Regexp)) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the terminal test")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed; the terminal tests of the REPL need it (apt-get install tmux)")
	}
	symbi, err := exec.LookPath("symbi")
	if err != nil {
		t.Skip("symbi is not on PATH")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmCtx := func(ctx context.Context, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, tmux, append([]string{"-S", sock}, args...)...)
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
		out, err := cmd.CombinedOutput()
		if err != nil && args[0] != "kill-server" && args[0] != "capture-pane" {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tm := func(args ...string) string { t.Helper(); return tmCtx(ctx, args...) }
	tm("new-session", "-d", "-s", "repl", "-x", "150", "-y", "50", "-c", dir, prefix+" "+symbi+" repl .; sleep 30")
	// The pane's shell leads a session of its own: the REPL and whatever
	// it starts belong to it. The server and that session must be gone
	// when the test is, whether it passed, failed or timed out (the
	// test's ctx has ended by then, so the cleanup has its own).
	ids := strings.Fields(tm("display-message", "-p", "-t", "repl", "#{pid} #{pane_pid}"))
	if len(ids) != 2 {
		t.Fatalf("tmux: server and pane pids %q", ids)
	}
	server, _ := strconv.Atoi(ids[0])
	pane, _ := strconv.Atoi(ids[1])
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tmCtx(cctx, "kill-server")
		if left := waitGone(cctx, server, pane); len(left) > 0 {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("still running after tmux kill-server, killed: %v", left)
		}
	})

	// waitFor polls the screen until re matches it (tmux drops trailing
	// spaces, so the prompt "> " reads ">"): the REPL answers in its
	// own time, and the test only needs to know that it did.
	waitFor = func(what string, re *regexp.Regexp) {
		t.Helper()
		for {
			screen := tm("capture-pane", "-p", "-t", "repl")
			if re.MatchString(screen) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %s never appeared; the screen:\n%s", what, re, screen)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	keys = func(literal string, then ...string) {
		t.Helper()
		if literal != "" {
			tm("send-keys", "-t", "repl", "-l", literal)
		}
		if len(then) > 0 {
			tm(append([]string{"send-keys", "-t", "repl"}, then...)...)
		}
	}
	return keys, waitFor
}

// waitGone waits until neither the process server nor any process of the
// session sid is left, and returns those left when ctx ends first.
func waitGone(ctx context.Context, server, sid int) []int {
	for {
		left := sessionProcs(sid)
		if syscall.Kill(server, 0) == nil && !slices.Contains(left, server) {
			left = append(left, server)
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sessionProcs lists the live processes of session sid, from /proc.
func sessionProcs(sid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 3 && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestReplTmux drives the real `symbi repl` on a terminal, under tmux:
// Tab completes an attribute path, open brackets continue the input on
// the next line, an error shows a caret, and the history is saved. The
// symbi on PATH is this test binary (TestMain puts it there).
func TestReplTmux(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../testdata/repl/config")); err != nil {
		t.Fatal(err)
	}
	history := filepath.Join(dir, "history")
	ctx, cancel := context.WithTimeout(context.Background(), tmuxHangLimit)
	defer cancel()
	keys, waitFor := replOnTmux(t, ctx, dir, "env SYMBI_REPL_HISTORY="+history)

	waitFor("the prompt", regexp.MustCompile(`(?m)^> ?$`))

	keys("agent.assistant.lo", "Tab")
	waitFor("Tab completing the attribute", regexp.MustCompile(`(?m)^> agent\.assistant\.loop\s*$`))
	keys(".mo", "Tab")
	waitFor("Tab completing the next attribute", regexp.MustCompile(`(?m)^> agent\.assistant\.loop\.mode\s*$`))
	keys("", "Enter")
	waitFor("the value", regexp.MustCompile(`(?m)^"react"\s*$`))

	keys("{", "Enter")
	waitFor("the continuation prompt", regexp.MustCompile(`(?m)^\.\.\.\s*$`))
	keys("a = upper(var.topic)", "Enter")
	keys("}", "Enter")
	waitFor("the multi-line value", regexp.MustCompile(`(?m)^\{\s*\n  a = "TIDES"\s*\n\}\s*$`))

	keys("agent.nobody", "Enter")
	waitFor("a diagnostic with a caret", regexp.MustCompile(`(?m)^   1: agent\.nobody\s*\n\s+\^+\s*$`))

	keys(":quit", "Enter")
	for {
		b, _ := os.ReadFile(history)
		if strings.Contains(string(b), ":quit") {
			if !strings.Contains(string(b), "agent.assistant.loop.mode\n") {
				t.Errorf("history:\n%s", b)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the history was never saved to %s", history)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestReplTmuxCtrlCAfterATimedOutApproval: an escalation's prompt times out
// and the run goes on while the prompt's read still holds the terminal
// (raw, so Ctrl-C is a key, not SIGINT); Ctrl-C then cancels the run, as
// it does during any :run, and the REPL takes the next input.
func TestReplTmuxCtrlCAfterATimedOutApproval(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
recovery "ask" {
  escalate {
    timeout = "1s"
  }
}
tool "flaky" {
  description = "always fails"
  parameters  = { type = "object" }
  command {
    argv = ["sh", "-c", "exit 3"]
  }
  effect   = "none"
  recovery = recovery.ask
}
policy "rules" {
  rules {
    allow = ["flaky"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.flaky]
  policies = [policy.rules]
}
`,
		"script.json": `{"turns": [{"tool_calls": [{"id": "f1", "name": "flaky", "arguments": "{}"}]}, {"latency": "10m", "content": "too late"}]}`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), tmuxHangLimit)
	defer cancel()
	keys, waitFor := replOnTmux(t, ctx, dir, "env SYMBI_REPL_HISTORY="+filepath.Join(dir, "history"))
	waitFor("the prompt", regexp.MustCompile(`(?m)^> ?$`))
	keys(":run a go", "Enter")
	waitFor("the escalation's prompt", regexp.MustCompile(`Approve\? \[y/N\]`))
	// The timeout is printed once the prompt has let go of the read; from
	// then on the run is in its model call, which answers only after the
	// test's hang limit, so a Ctrl-C can only cancel the run.
	waitFor("its timeout", regexp.MustCompile(`nobody answered within 1s`))
	keys("", "C-c")
	waitFor("the run cancelled", regexp.MustCompile(`(?i)cancel`))
	keys("1 + 1", "Enter")
	waitFor("the next input's value", regexp.MustCompile(`(?m)^2\s*$`))
}
