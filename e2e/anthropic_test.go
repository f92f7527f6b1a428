package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

const anthropicTestKey = "sk-ant-e2e-secret-key-0123"

// anthropicExample copies examples/anthropic.hcl into a fresh directory, so
// a run writes nothing into the repository.
func anthropicExample(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "examples", "anthropic.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "anthropic.hcl", string(src))
}

// TestAnthropicExampleReactLoop runs examples/anthropic.hcl, as shipped,
// against the fake server's Messages API: the model thinks, calls the
// calculator, the rules policy allows it, the tool answers, and the model
// answers. The thinking reaches neither stdout nor the answer, goes back to
// the server with the tool use it led to (the server refuses a turn that
// leaves it out or changes it), and the call's cache reads and writes are
// priced at the cache's prices.
func TestAnthropicExampleReactLoop(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithReplies(
		fakeserver.Reply{
			Reasoning: "17 * 23 needs the calculator",
			ToolCalls: []fakeserver.ToolCall{{ID: "toolu_e2e_1", Name: "calculator", Arguments: `{"expression":"17 * 23"}`}},
			Usage:     &provider.Usage{PromptTokens: 1000, CompletionTokens: 50, CacheReadTokens: 800, CacheWriteTokens: 100},
		},
		fakeserver.Reply{Chunks: []string{"17 × 23 ", "is 391."}},
	))
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{env: []string{"ANTHROPIC_BASE_URL=" + srv.AnthropicURL(), "ANTHROPIC_API_KEY=" + anthropicTestKey}},
		"run", "--state-dir", state, anthropicExample(t), "What is 17 * 23?")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "17 × 23 is 391." {
		t.Fatalf("want exit 0 and the answer alone on stdout\n%s", r)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first := reqs[0].Anthropic
	if first.Thinking == nil || first.Thinking.Type != "enabled" || first.Thinking.BudgetTokens != 2048 || first.CacheControl == nil || first.CacheControl.TTL != "5m" {
		t.Errorf("first request: thinking %+v, cache_control %+v", first.Thinking, first.CacheControl)
	}
	if len(first.System) != 1 || !strings.Contains(first.System[0].Text, "careful assistant") {
		t.Errorf("the system prompt is not the top-level system field: %+v", first.System)
	}
	second := reqs[1].Anthropic.Messages
	if n := len(second); n != 3 {
		t.Fatalf("second request has %d messages, want user, assistant, user", n)
	}
	turn := second[1].Content
	if turn[0].Type != "thinking" || turn[0].Thinking != "17 * 23 needs the calculator" || turn[len(turn)-1].Type != "tool_use" || turn[len(turn)-1].ID != "toolu_e2e_1" {
		t.Errorf("assistant turn sent back as %+v", turn)
	}
	if res := second[2].Content[0]; res.Type != "tool_result" || res.ToolUseID != "toolu_e2e_1" || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "391") {
		t.Errorf("tool result sent as %+v", res)
	}
	for _, req := range reqs {
		if !strings.Contains(req.Header.Get("Authorization")+req.Header.Get("X-Api-Key"), anthropicTestKey) {
			t.Errorf("the key from ANTHROPIC_API_KEY was not sent")
		}
	}

	evs := readJournal(t, state, onlyRun(t, state))
	if end := terminated(t, evs); end.Reason != "completed" || end.Answer != "17 × 23 is 391." {
		t.Errorf("terminated %+v", end)
	}
	results := eventsOf[journal.ToolResultData](t, evs, journal.ToolResult)
	if len(results) != 1 || results[0].Tool != "calculator" || !strings.Contains(results[0].Output, "391") {
		t.Errorf("tool results %+v", results)
	}
	turns := eventsOf[journal.ReasoningCompleteData](t, evs, journal.ReasoningComplete)
	if len(turns) != 2 {
		t.Fatalf("%d reasoning_complete events", len(turns))
	}
	u := turns[0].Usage
	if u.PromptTokens != 1000 || u.CacheReadTokens != 800 || u.CacheWriteTokens != 100 || turns[0].FinishReason != "tool_use" {
		t.Errorf("first turn journalled %+v, finish %q", u, turns[0].FinishReason)
	}
	// 100 uncached at $3, 800 read at $0.30, 100 written at $3.75, 50 out
	// at $15, per million.
	if want := (100*3 + 800*0.3 + 100*3.75 + 50*15) / 1e6; math.Abs(turns[0].CostUSD-want) > 1e-12 {
		t.Errorf("first turn cost $%v, want $%v", turns[0].CostUSD, want)
	}
	raw, err := os.ReadFile(journal.Path(state, onlyRun(t, state)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), anthropicTestKey) || strings.Contains(r.stdout+r.stderr, anthropicTestKey) {
		t.Error("the API key reached the journal or the terminal")
	}
	if strings.Contains(r.stdout, "needs the calculator") {
		t.Error("the thinking reached stdout")
	}
}

// TestAnthropicAuthErrorExitCode: a key the API refuses ends the run as a
// runtime failure (exit 4) whose error names authentication_failed, on
// stderr and in the journal, without printing the key, and without a retry.
func TestAnthropicAuthErrorExitCode(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.ErrorReply(401, "authentication_error", "invalid x-api-key "+anthropicTestKey)))
	state := filepath.Join(t.TempDir(), "state")
	r := symbi(t, call{env: []string{"ANTHROPIC_BASE_URL=" + srv.AnthropicURL(), "ANTHROPIC_API_KEY=" + anthropicTestKey}},
		"run", "--state-dir", state, anthropicExample(t), "hello")
	if r.code != 4 {
		t.Errorf("exit %d, want 4 (runtime failure)\n%s", r.code, r)
	}
	if !strings.Contains(r.stderr, "authentication_failed") || strings.Contains(r.stderr, anthropicTestKey) {
		t.Errorf("stderr does not name authentication_failed, or shows the key:\n%s", r.stderr)
	}
	end := terminated(t, readJournal(t, state, onlyRun(t, state)))
	if end.Reason != "error" || !strings.Contains(end.Error, "authentication_failed") {
		t.Errorf("terminated %+v", end)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests; an authentication failure is not retried", n)
	}
}

// TestAnthropicMissingKey: without the key, the run does not start and says
// which variable to set; validating needs no key.
func TestAnthropicMissingKey(t *testing.T) {
	t.Parallel()
	example := anthropicExample(t)
	if r := symbi(t, call{}, "validate", example); r.code != 0 {
		t.Fatalf("validate without a key:\n%s", r)
	}
	r := symbi(t, call{}, "run", "--state-dir", filepath.Join(t.TempDir(), "state"), example, "hello")
	if r.code == 0 || !strings.Contains(r.stderr, "missing_api_key") || !strings.Contains(r.stderr, "ANTHROPIC_API_KEY") {
		t.Errorf("want a failure naming missing_api_key and ANTHROPIC_API_KEY\n%s", r)
	}
}

// TestAnthropicFaultsThroughTheCLI injects each fault the fake server
// knows, in the Messages API's format, into `symbi run` on the anthropic
// provider, streamed and plain, with the expectations the Chat Completions
// format has (TestEveryFaultThroughTheCLI), and an error inside the stream
// besides.
func TestAnthropicFaultsThroughTheCLI(t *testing.T) {
	t.Parallel()
	good := fakeserver.Text("fine", " thanks")
	overloaded := fakeserver.Reply{Fault: fakeserver.FaultErrorInStream, EventsBeforeFault: 1, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
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
		{"overloaded_in_stream_then_answer", []fakeserver.Reply{overloaded, good}, "", "", 0},
		{"overloaded_in_stream_twice", []fakeserver.Reply{overloaded, overloaded}, "transport_failed (overloaded_error)", "", 0},
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
	dir := fixture(t, "anthropic")
	for _, agent := range []string{"streamed", "plain"} {
		for _, tc := range cases {
			t.Run(agent+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := fakeserver.New(t, fakeserver.WithReplies(tc.replies...))
				state := filepath.Join(t.TempDir(), "state")
				r := symbi(t, call{dir: dir, timeout: 30 * time.Second},
					"run", "--agent", agent, "--state-dir", state, "--var", "base_url="+srv.AnthropicURL(), ".", "hello")
				if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
					t.Fatalf("symbi panicked:\n%s", r)
				}
				end := terminated(t, readJournal(t, state, onlyRun(t, state)))
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
