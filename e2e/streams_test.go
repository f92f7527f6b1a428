package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// streamsRun runs the streams fixture's agent against replies and returns
// how the binary ended, the journal and the requests the server saw.
func streamsRun(t *testing.T, replies []fakeserver.Reply, extra ...string) (result, []journal.Event, int) {
	t.Helper()
	srv := fakeserver.New(t, fakeserver.WithReplies(replies...))
	state := filepath.Join(t.TempDir(), "state")
	args := append([]string{"run", "--agent", "streamed", "--state-dir", state, "--var", "base_url=" + srv.URL()}, extra...)
	args = append(args, ".", "What is 6 * 7?")
	r := symbi(t, call{dir: fixture(t, "streams"), timeout: 30 * time.Second}, args...)
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("symbi panicked:\n%s", r)
	}
	return r, readJournal(t, state, onlyRun(t, state)), len(srv.Requests())
}

// TestErrorInsideTheStreamThroughTheCLI: an error a server sends after a
// 200 ends the run as the same error sent as a response does (exit 4, its
// kind on stderr and in the journal), tried as often as that error is,
// with no HTTP status that was not on the wire and no "(0)" for a null
// code.
func TestErrorInsideTheStreamThroughTheCLI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reply    fakeserver.Reply
		says     string
		requests int
	}{
		{"insufficient_quota", fakeserver.Reply{ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"},
			"rate_limited (insufficient_quota)", 1},
		{"invalid_api_key", fakeserver.Reply{ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided"},
			"authentication_failed (invalid_api_key)", 1},
		{"code null", fakeserver.Reply{ErrorType: "api_error", ErrorMessage: "the model runner stopped"},
			"transport_failed: ", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reply := tc.reply
			reply.Fault = fakeserver.FaultErrorInStream
			r, evs, requests := streamsRun(t, []fakeserver.Reply{reply, reply, reply})
			if r.code != 4 {
				t.Errorf("exit %d, want 4 (runtime failure)\n%s", r.code, r)
			}
			end := terminated(t, evs)
			if end.Reason != "error" || !strings.Contains(end.Error, tc.says) || !strings.Contains(end.Error, reply.ErrorMessage) {
				t.Errorf("terminated %q with error %q; want it to say %q and the server's message", end.Reason, end.Error, tc.says)
			}
			if !strings.Contains(r.stderr, tc.says) || !strings.Contains(r.stderr, "inside the stream") {
				t.Errorf("stderr does not say %q inside the stream:\n%s", tc.says, r.stderr)
			}
			for _, bad := range []string{"HTTP", "(0)"} {
				if strings.Contains(r.stderr, bad) || strings.Contains(end.Error, bad) {
					t.Errorf("the error says %q:\n%s", bad, r.stderr)
				}
			}
			if requests != tc.requests {
				t.Errorf("the model was asked %d times, want %d", requests, tc.requests)
			}
		})
	}
}

// TestDoneWithoutFinishReasonThroughTheCLI: a stream that ends with [DONE]
// but no finish reason is a complete answer (exit 0, printed), and the
// journal says the finish reason was missing; one cut off without [DONE]
// still fails.
func TestDoneWithoutFinishReasonThroughTheCLI(t *testing.T) {
	t.Parallel()
	r, evs, requests := streamsRun(t, []fakeserver.Reply{{Chunks: []string{"6 × 7 ", "is 42."}, NoFinishReason: true}})
	if r.code != 0 || strings.TrimSpace(r.stdout) != "6 × 7 is 42." {
		t.Fatalf("want the answer and exit 0\n%s", r)
	}
	if requests != 1 {
		t.Errorf("%d requests", requests)
	}
	turns := eventsOf[journal.ReasoningCompleteData](t, evs, journal.ReasoningComplete)
	if len(turns) != 1 || !turns[0].FinishReasonMissing || turns[0].FinishReason != "" || turns[0].Content != "6 × 7 is 42." {
		t.Errorf("reasoning_complete %+v; want the answer with finish_reason_missing", turns)
	}

	cut := fakeserver.Reply{Chunks: []string{"6 × 7 ", "is 42."}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 3}
	r, evs, _ = streamsRun(t, []fakeserver.Reply{cut, cut, cut})
	if end := terminated(t, evs); r.code != 4 || !strings.Contains(end.Error, "transport_failed (truncated)") {
		t.Errorf("a stream cut without [DONE]: terminated %+v\n%s", end, r)
	}
}

// TestReasoningThroughTheCLI: a model's reasoning (here as vLLM and Ollama
// name it) is in --json as reasoning_delta events before the answer, in
// the journal's reasoning_complete, and on stderr, never on stdout.
func TestReasoningThroughTheCLI(t *testing.T) {
	t.Parallel()
	reply := fakeserver.Reply{ReasoningChunks: []string{"Six sevens ", "are forty-two."}, ReasoningAs: fakeserver.ReasoningText, Chunks: []string{"42"}}
	const reasoning = "Six sevens are forty-two."

	r, evs, _ := streamsRun(t, []fakeserver.Reply{reply}, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r)
	}
	var streamed, answer strings.Builder
	for line := range strings.Lines(r.stdout) {
		var ev struct {
			Event string `json:"event"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		switch ev.Event {
		case "reasoning_delta":
			if answer.Len() > 0 {
				t.Errorf("reasoning %q after the answer began", ev.Delta)
			}
			streamed.WriteString(ev.Delta)
		case "content_delta":
			answer.WriteString(ev.Delta)
		}
	}
	if streamed.String() != reasoning || answer.String() != "42" {
		t.Errorf("--json reasoning %q, answer %q\n%s", streamed.String(), answer.String(), r.stdout)
	}
	turns := eventsOf[journal.ReasoningCompleteData](t, evs, journal.ReasoningComplete)
	if len(turns) != 1 || turns[0].Reasoning != reasoning || turns[0].Content != "42" {
		t.Errorf("reasoning_complete %+v", turns)
	}

	r, _, _ = streamsRun(t, []fakeserver.Reply{reply})
	if r.code != 0 || r.stdout != "42\n" {
		t.Errorf("stdout %q: want the answer alone\n%s", r.stdout, r)
	}
	if !strings.HasPrefix(r.stderr, reasoning+"\n") {
		t.Errorf("stderr does not begin with the reasoning on a line of its own:\n%s", r.stderr)
	}
}
