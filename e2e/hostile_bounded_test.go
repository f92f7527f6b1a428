//go:build linux

package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// Issue #11, item 8: the call in flight is bounded. A hostile model streams
// without end, or sends 80 MB of tool-call arguments; symbi must stop the
// call by its token budget or by the response byte cap, and its memory must
// stay bounded while it does: the peak RSS of the symbi process (a memory
// bound, not a timing one) stays under maxRSS. Before the fix the endless
// stream counted no tokens, grew past a gigabyte and ran to the budget's
// timeout; the arguments grew past 1.5 GiB. The configuration is
// testdata/e2e/hostile_bounded; every budget there has a 20 s timeout, so
// that a call nothing stops ends there.

const maxRSS = 200 << 20

// TestHostileEndlessStreamStopsAtTheTokenBudget: a model that streams
// content without end is stopped while its one call is in flight, by the
// call's max_output_tokens (the default 4096) or by the run's
// max_total_tokens: exit 3, budget_exceeded naming the limit, the streamed
// output counted.
func TestHostileEndlessStreamStopsAtTheTokenBudget(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "hostile_bounded")
	for _, tc := range []struct{ agent, limit string }{
		{"output_cap", "max_output_tokens"},
		{"total_cap", "max_total_tokens"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			srv := fakeserver.New(t, fakeserver.WithoutHistory(), fakeserver.WithHandler(func(int, fakeserver.Request) fakeserver.Reply {
				return fakeserver.Reply{Flood: &fakeserver.Flood{Chunk: 4096}}
			}))
			state := filepath.Join(t.TempDir(), "state")
			r, rss := runMeasured(t, dir, "run", "--agent", tc.agent, "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "hello")
			t.Logf("exit %d after %v, peak RSS %d MiB", r.code, r.elapsed.Round(time.Millisecond), rss>>20)
			if rss >= maxRSS {
				t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, maxRSS>>20)
			}
			if r.code != 3 {
				t.Errorf("exit %d, want 3 (stopped by the budget)\n%s", r.code, r)
			}
			if want := "budget_exceeded (" + tc.limit + ")"; !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
			}
			evs := readJournal(t, state, onlyRun(t, state))
			end := terminated(t, evs)
			if end.Reason != "budget_exceeded" || end.Limit != tc.limit {
				t.Errorf("terminated %q limit %q, want budget_exceeded limit %s", end.Reason, end.Limit, tc.limit)
			}
			if end.Usage.ModelCalls != 1 || end.Usage.CompletionTokens == 0 {
				t.Errorf("usage %+v: want the one call, with what it streamed counted", end.Usage)
			}
		})
	}
}

// TestHostileHugeArgumentsStopAtTheByteCap: a model that sends 80 MB of
// tool-call arguments — in 64 KiB pieces, in one 80 MB data: line, or as a
// plain (non-streamed) body — is stopped at the model's max_response_bytes
// (8 MiB by default; no token limit is set that could stop it first): exit 4,
// a response_too_large error, one request (not retried), no tool run.
func TestHostileHugeArgumentsStopAtTheByteCap(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "hostile_bounded")
	const size = 80 << 20
	for _, tc := range []struct {
		name, agent string
		flood       fakeserver.Flood
	}{
		{"pieces", "arguments", fakeserver.Flood{Arguments: true, Bytes: size, Chunk: 64 << 10}},
		{"one_line", "arguments", fakeserver.Flood{Arguments: true, Bytes: size, OneLine: true}},
		{"plain", "arguments_plain", fakeserver.Flood{Arguments: true, Bytes: size}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fakeserver.New(t, fakeserver.WithHandler(func(n int, _ fakeserver.Request) fakeserver.Reply {
				if n > 0 {
					return fakeserver.Text("done")
				}
				return fakeserver.Reply{Flood: &tc.flood, ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator"}}}
			}))
			state := filepath.Join(t.TempDir(), "state")
			r, rss := runMeasured(t, dir, "run", "--agent", tc.agent, "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "hello")
			t.Logf("exit %d after %v, peak RSS %d MiB", r.code, r.elapsed.Round(time.Millisecond), rss>>20)
			if rss >= maxRSS {
				t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, maxRSS>>20)
			}
			if r.code != 4 {
				t.Errorf("exit %d, want 4 (the model call failed)\n%s", r.code, r)
			}
			if !strings.Contains(r.stderr, "response_too_large") {
				t.Errorf("stderr does not name response_too_large:\n%s", r.stderr)
			}
			evs := readJournal(t, state, onlyRun(t, state))
			end := terminated(t, evs)
			if end.Reason != "error" || !strings.Contains(end.Error, "response_too_large") {
				t.Errorf("terminated %q with error %q, want reason error naming response_too_large", end.Reason, end.Error)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1: a response too large is not retried", n)
			}
			for _, ev := range evs {
				if ev.Type == journal.ToolsDispatched || ev.Type == journal.ToolResult {
					t.Errorf("a tool call of the cut-off response reached %s", ev.Type)
				}
			}
		})
	}
}

// runMeasured runs the binary to its end like symbi(), keeping only the
// first 64 KiB of each output stream (a flood on stdout would otherwise
// fill the test's own memory), and returns how it ended and the process's
// peak resident set size in bytes.
func runMeasured(t *testing.T, dir string, args ...string) (result, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, symbiBin, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr headWriter
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(started)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("symbi %s: still running after %v (hang detector), killed\n%s", strings.Join(args, " "), hangLimit, r)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("symbi %s: %v", strings.Join(args, " "), err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no resource usage for the process")
	}
	return r, ru.Maxrss << 10 // kilobytes on Linux
}

// headWriter keeps the first 64 KiB written to it and counts the rest.
type headWriter struct {
	head    []byte
	dropped int64
}

func (w *headWriter) Write(p []byte) (int, error) {
	keep := min(len(p), 64<<10-len(w.head))
	w.head = append(w.head, p[:keep]...)
	w.dropped += int64(len(p) - keep)
	return len(p), nil
}

func (w *headWriter) String() string {
	if w.dropped > 0 {
		return string(w.head) + "\n… " + strconv.FormatInt(w.dropped, 10) + " more bytes\n"
	}
	return string(w.head)
}
