package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestEveryFaultThroughTheCLI injects each fault the fake server knows
// into `symbi run`, streamed and plain: a transient fault that the
// transport retries recovers (exit 0, answer on stdout); a lasting one ends
// the run with exit 4 and a terminated event whose error names the
// provider's error kind. The hang detector kills any run that does neither.
func TestEveryFaultThroughTheCLI(t *testing.T) {
	t.Parallel()
	good := fakeserver.Text("fine", " thanks")
	cases := []struct {
		name    string
		replies []fakeserver.Reply
		kind    string // what the error must say; "" = the run recovers
		plain   string // what it must say on the plain agent, when not kind
		atLeast time.Duration
	}{
		{"rate_limit_then_answer", []fakeserver.Reply{{Fault: fakeserver.FaultRateLimit, RetryAfter: time.Second}, good}, "", "", time.Second},
		{"rate_limit_twice", []fakeserver.Reply{{Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}, {Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}}, "rate_limited", "", 0},
		{"rate_limit_longer_than_max_backoff", []fakeserver.Reply{{Fault: fakeserver.FaultRateLimit, RetryAfter: time.Minute}, good}, "rate_limited", "", 0},
		{"server_error_then_answer", []fakeserver.Reply{{Fault: fakeserver.FaultServerError}, good}, "", "", 0},
		{"server_error_twice", []fakeserver.Reply{{Fault: fakeserver.FaultServerError}, {Fault: fakeserver.FaultServerError}}, "transport_failed", "", 0},
		{"reset_then_answer", []fakeserver.Reply{{Fault: fakeserver.FaultReset}, good}, "", "", 0},
		{"reset_twice", []fakeserver.Reply{{Fault: fakeserver.FaultReset}, {Fault: fakeserver.FaultReset}}, "transport_failed", "", 0},
		{"stall_before_first_event", []fakeserver.Reply{{Fault: fakeserver.FaultStallBeforeFirstEvent}, {Fault: fakeserver.FaultStallBeforeFirstEvent}}, "timeout (first_event)", "", 0},
		{"stall_mid_stream", []fakeserver.Reply{{Chunks: []string{"a", "b", "c"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 2}, {Chunks: []string{"a", "b", "c"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 2}}, "timeout (idle)", "timeout (first_event)", 0},
		{"malformed_json", []fakeserver.Reply{{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultMalformedJSON, EventsBeforeFault: 2}, {Chunks: []string{"a", "b"}, Fault: fakeserver.FaultMalformedJSON, EventsBeforeFault: 2}}, "malformed_response", "", 0},
		{"truncated_then_answer", []fakeserver.Reply{{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 1}, good}, "", "", 0},
		{"truncated_twice", []fakeserver.Reply{{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 3}, {Chunks: []string{"a", "b"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 3}}, "transport_failed", "", 0},
		{"unknown_model", []fakeserver.Reply{fakeserver.ErrorReply(404, "model_not_found", "no such model")}, "model_unavailable", "", 0},
		{"bad_key", []fakeserver.Reply{fakeserver.ErrorReply(401, "invalid_api_key", "no")}, "authentication_failed", "", 0},
		{"empty_turn", []fakeserver.Reply{{}}, "empty_response", "", 0},
	}
	dir := fixture(t, "faults")
	for _, agent := range []string{"streamed", "plain"} {
		for _, tc := range cases {
			t.Run(agent+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := fakeserver.New(t, fakeserver.WithReplies(tc.replies...))
				state := filepath.Join(t.TempDir(), "state")
				r := symbi(t, call{dir: dir, timeout: 30 * time.Second},
					"run", "--agent", agent, "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "hello")
				if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
					t.Fatalf("symbi panicked:\n%s", r)
				}
				evs := readJournal(t, state, onlyRun(t, state))
				end := terminated(t, evs)
				if tc.kind == "" {
					if r.code != 0 || end.Reason != "completed" || strings.TrimSpace(r.stdout) != "fine thanks" {
						t.Fatalf("want a recovery (exit 0, completed, the answer); terminated %+v\n%s", end, r)
					}
					if n := len(srv.Requests()); n != 2 {
						t.Errorf("%d requests, want the failed one and its retry", n)
					}
					if r.elapsed < tc.atLeast {
						t.Errorf("recovered after %v; the server asked to wait %v", r.elapsed, tc.atLeast)
					}
					return
				}
				if r.code != 4 {
					t.Errorf("exit %d, want 4 (runtime failure)\n%s", r.code, r)
				}
				kind := tc.kind
				if agent == "plain" && tc.plain != "" {
					kind = tc.plain
				}
				if end.Reason != "error" || !strings.Contains(end.Error, kind) {
					t.Errorf("terminated %q with error %q; want reason error naming %s", end.Reason, end.Error, kind)
				}
				if !strings.Contains(r.stderr, kind) {
					t.Errorf("stderr does not name %s:\n%s", kind, r.stderr)
				}
			})
		}
	}
}

// TestStallEndsByBudgetTimeout stalls a model that has no stream timeouts:
// the budget's 2 s timeout must end the run (exit 3, terminated timeout),
// before or after the first event.
func TestStallEndsByBudgetTimeout(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "faults")
	for _, fault := range []fakeserver.Reply{
		{Fault: fakeserver.FaultStallBeforeFirstEvent},
		{Chunks: []string{"a", "b", "c"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 2},
	} {
		t.Run(fault.Fault.String(), func(t *testing.T) {
			t.Parallel()
			srv := fakeserver.New(t, fakeserver.WithReplies(fault))
			state := filepath.Join(t.TempDir(), "state")
			r := symbi(t, call{dir: dir, timeout: 30 * time.Second},
				"run", "--agent", "untimed", "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "hello")
			if r.code != 3 {
				t.Errorf("exit %d, want 3 (stopped by the budget's timeout)\n%s", r.code, r)
			}
			end := terminated(t, readJournal(t, state, onlyRun(t, state)))
			if end.Reason != "timeout" {
				t.Errorf("terminated %q (%s), want timeout", end.Reason, end.Error)
			}
		})
	}
}

// TestCtrlCDuringStall interrupts a run whose model has stalled, with
// SIGINT (Ctrl-C) and with SIGTERM: the run is cancelled cooperatively
// (exit 130, terminated cancelled in the journal) without waiting for any
// timeout.
func TestCtrlCDuringStall(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "faults")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Reply{Fault: fakeserver.FaultStallBeforeFirstEvent}))
			state := filepath.Join(t.TempDir(), "state")
			p := start(t, call{dir: dir, timeout: 30 * time.Second}, "run", "--agent", "untimed", "--state-dir", state, "--var", "base_url="+srv.URL(), ".", "hello")
			deadline := time.Now().Add(hangLimit)
			for len(srv.Requests()) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := p.wait(t)
			if r.code != 130 {
				t.Errorf("exit %d after %v, want 130\n%s", r.code, sig, r)
			}
			end := terminated(t, readJournal(t, state, onlyRun(t, state)))
			if end.Reason != "cancelled" {
				t.Errorf("terminated %q (%s), want cancelled", end.Reason, end.Error)
			}
		})
	}
}

// TestSlowToolEndsWithTheRun runs a command tool that would sleep far past
// the run's 1 s budget: the budget's timeout ends the run (exit 3,
// terminated timeout), and Ctrl-C while the tool sleeps cancels it (exit
// 130); either way the sleeping process is killed, not left behind.
func TestSlowToolEndsWithTheRun(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc: the test looks for left-behind processes there")
	}
	dir := fixture(t, "slow_tool")
	for i, interrupt := range []bool{false, true} {
		name := map[bool]string{false: "budget_timeout", true: "ctrl_c"}[interrupt]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			nap := fmt.Sprintf("29.%d%06d", i, time.Now().UnixNano()%1000000) // distinctive, to find the process
			state := filepath.Join(t.TempDir(), "state")
			p := start(t, call{dir: dir, timeout: 30 * time.Second}, "run", "--state-dir", state, "--var", "nap="+nap, ".", "go")
			if interrupt {
				deadline := time.Now().Add(hangLimit)
				for len(processesMentioning("sleep "+nap)) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
					t.Fatal(err)
				}
			}
			r := p.wait(t)
			assertNoProcess(t, "sleep "+nap)
			end := terminated(t, readJournal(t, state, onlyRun(t, state)))
			want, code := "timeout", 3
			if interrupt {
				want, code = "cancelled", 130
			}
			if r.code != code || end.Reason != want {
				t.Errorf("exit %d, terminated %q; want exit %d, %s\n%s", r.code, end.Reason, code, want, r)
			}
		})
	}
}
