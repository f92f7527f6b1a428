package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// hangGuard bounds every call so that a hang fails the test instead of
// stalling the suite; no test relies on it to pass.
const hangGuard = 10 * time.Second

const testKey = "sk-ant-test-secret-key"

// sleeps records the waits the retry loop asked for, without waiting.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

type setup struct {
	server *fakeserver.Server
	model  *Model
	sleeps *sleeps
}

func newSetup(t *testing.T, edit func(*Config), replies ...fakeserver.Reply) setup {
	t.Helper()
	s := fakeserver.New(t, fakeserver.WithReplies(replies...))
	sl := &sleeps{}
	cfg := Config{
		BaseURL:   s.AnthropicURL(),
		APIKey:    testKey,
		Model:     "claude-test",
		Streaming: true,
		Retry:     plan.TransportRetry{MaxAttempts: 3, Backoff: plan.Duration(100 * time.Millisecond), MaxBackoff: plan.Duration(30 * time.Second)},
		Sleep:     sl.sleep,
		Rand:      func() float64 { return 0.5 },
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return setup{server: s, model: m, sleeps: sl}
}

func ask(text string) provider.Request {
	return provider.Request{Messages: []provider.Message{{Role: provider.System, Content: "be brief"}, {Role: provider.User, Content: text}}}
}

// events collects what a call delivered.
type events struct {
	content, reasoning, calls []string
}

// call runs Stream under hangGuard and collects the events.
func (s setup) call(t *testing.T, req provider.Request) (provider.Response, events, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var ev events
	resp, err := s.model.Stream(ctx, req, func(e provider.Event) {
		if e.ContentDelta != "" {
			ev.content = append(ev.content, e.ContentDelta)
		}
		if e.ReasoningDelta != "" {
			ev.reasoning = append(ev.reasoning, e.ReasoningDelta)
		}
		if e.ToolCallDelta != "" {
			ev.calls = append(ev.calls, e.ToolCallDelta)
		}
	})
	if ctx.Err() != nil {
		t.Fatalf("Stream hung until the test's guard: %v", err)
	}
	return resp, ev, err
}

func wantKind(t *testing.T, err error, kind provider.ErrorKind, detail string) *provider.Error {
	t.Helper()
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *provider.Error of kind %s", err, err, kind)
	}
	if pe.Kind != kind || (detail != "" && pe.Detail != detail) {
		t.Fatalf("err = %v, want kind %s detail %q", err, kind, detail)
	}
	return pe
}

func TestStreamDeliversTextAndUsageWithCacheTokens(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{
		Chunks: []string{"The ", "answer ", "is 42."},
		Usage:  &provider.Usage{PromptTokens: 100, CompletionTokens: 7, CacheReadTokens: 60, CacheWriteTokens: 30},
	})
	resp, ev, err := s.call(t, ask("6*7?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "The answer is 42." || resp.FinishReason != "end_turn" {
		t.Errorf("resp = %+v", resp)
	}
	if diff := cmp.Diff([]string{"The ", "answer ", "is 42."}, ev.content); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	want := provider.Usage{PromptTokens: 100, CompletionTokens: 7, TotalTokens: 107, CacheReadTokens: 60, CacheWriteTokens: 30}
	if !resp.UsageKnown || resp.Usage != want {
		t.Errorf("usage %+v (known %v), want %+v", resp.Usage, resp.UsageKnown, want)
	}
	req := s.server.Requests()[0]
	if req.Path != "/v1/messages" || !req.Anthropic.Stream || req.Anthropic.MaxTokens != DefaultMaxTokens || req.Anthropic.Model != "claude-test" {
		t.Errorf("request %s %+v", req.Path, req.Anthropic)
	}
	if got := req.Anthropic.System; len(got) != 1 || got[0].Text != "be brief" {
		t.Errorf("system = %+v, want the system prompt as the top-level field", got)
	}
	if auth := req.Header.Get("Authorization") + req.Header.Get("X-Api-Key"); !strings.Contains(auth, testKey) {
		t.Errorf("the key was not sent: %v", req.Header)
	}
	if strings.Contains(string(req.Body), `"temperature"`) {
		t.Errorf("temperature sent: %s", req.Body)
	}
}

func TestStreamAssemblesToolUse(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{
		Chunks: []string{"Let me check."},
		ToolCalls: []fakeserver.ToolCall{
			{ID: "toolu_01", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			{ID: "toolu_02", Name: "clock", ArgumentChunks: []string{"{", "}"}},
			{ID: "toolu_03", Name: "noargs"},
		},
	})
	resp, ev, err := s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ToolCall{
		{ID: "toolu_01", Name: "calculator", Arguments: `{"expression":"6*7"}`},
		{ID: "toolu_02", Name: "clock", Arguments: `{}`},
		{ID: "toolu_03", Name: "noargs", Arguments: `{}`},
	}
	if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if resp.Content != "Let me check." || resp.FinishReason != "tool_use" {
		t.Errorf("resp = %+v", resp)
	}
	// The pieces are counted as they arrive: names, then the input's pieces.
	if got := strings.Join(ev.calls, ""); got != `calculator{"expression":"6*7"}clock{}noargs` {
		t.Errorf("tool call deltas = %q", got)
	}
}

// A turn's thinking is delivered as reasoning and kept with its
// signature; sent back on the next turn before the tool use it preceded,
// it passes the server's check (which refuses a changed block, as the API
// does).
func TestThinkingIsReasoningAndGoesBackUnchanged(t *testing.T) {
	s := newSetup(t, func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 2048 },
		fakeserver.Reply{Reasoning: "six sevens are forty-two", RedactedThinking: "c2VjcmV0", ToolCalls: []fakeserver.ToolCall{{ID: "toolu_9", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		fakeserver.Text("42"),
		fakeserver.Text("never"))
	req := ask("6*7?")
	req.Tools = []provider.ToolSpec{{Name: "calculator", Description: "evaluates", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}}}`)}}
	req.MaxOutputTokens = 4096
	resp, ev, err := s.call(t, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ev.reasoning, ""); got != "six sevens are forty-two" {
		t.Errorf("reasoning deltas = %q", got)
	}
	if resp.Reasoning != "six sevens are forty-two" {
		t.Errorf("Response.Reasoning = %q: the journal would not record the thinking", resp.Reasoning)
	}
	if len(ev.content) != 0 {
		t.Errorf("thinking reached the answer: %q", ev.content)
	}
	wantThinking := []provider.Thinking{
		{Text: "six sevens are forty-two", Signature: fakeserver.ThinkingSignature("six sevens are forty-two")},
		{Redacted: "c2VjcmV0"},
	}
	if diff := cmp.Diff(wantThinking, resp.Thinking); diff != "" {
		t.Errorf("thinking (-want +got):\n%s", diff)
	}
	first := s.server.Requests()[0].Anthropic
	if first.Thinking == nil || first.Thinking.Type != "enabled" || first.Thinking.BudgetTokens != 2048 {
		t.Errorf("thinking sent = %+v", first.Thinking)
	}

	next := req
	next.Messages = append(append([]provider.Message(nil), req.Messages...),
		provider.Message{Role: provider.Assistant, ToolCalls: resp.ToolCalls, Thinking: resp.Thinking},
		provider.Message{Role: provider.ToolRole, ToolCallID: "toolu_9", Name: "calculator", Content: "42"})
	if resp, _, err := s.call(t, next); err != nil || resp.Content != "42" {
		t.Fatalf("the next turn: %+v, %v", resp, err)
	}
	sent := s.server.Requests()[1].Anthropic.Messages[1].Content
	if sent[0].Type != "thinking" || sent[1].Type != "redacted_thinking" || sent[2].Type != "tool_use" || sent[2].ID != "toolu_9" {
		t.Errorf("assistant turn sent back as %+v", sent)
	}

	// A changed block is refused, as the API refuses it.
	next.Messages[2].Thinking = []provider.Thinking{{Text: "changed", Signature: resp.Thinking[0].Signature}}
	_, _, err = s.call(t, next)
	wantKind(t, err, provider.InvalidRequest, "invalid_request_error")
}

func TestConversationMapping(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Text("ok"))
	req := provider.Request{
		Messages: []provider.Message{
			{Role: provider.System, Content: "be brief"},
			{Role: provider.System, Content: "facts: the sky is blue"},
			{Role: provider.User, Content: "first"},
			{Role: provider.User, Content: "second"},
			{Role: provider.Assistant, Content: "calling", ToolCalls: []provider.ToolCall{{ID: "a", Name: "t", Arguments: `{"x":1}`}, {ID: "b", Name: "t", Arguments: `{not json`}}},
			{Role: provider.ToolRole, ToolCallID: "a", Name: "t", Content: "one"},
			{Role: provider.ToolRole, ToolCallID: "b", Name: "t", Content: ""},
			{Role: provider.System, Content: "[2 earlier messages omitted]"},
			{Role: provider.Assistant, Content: ""},
			{Role: provider.Assistant, Content: "done?"},
			{Role: provider.User, Content: "yes"},
		},
		Tools: []provider.ToolSpec{{Name: "t", Description: "a tool"}},
	}
	if _, _, err := s.call(t, req); err != nil {
		t.Fatal(err)
	}
	got := s.server.Requests()[0].Anthropic
	if diff := cmp.Diff(fakeserver.Blocks{{Type: "text", Text: "be brief"}, {Type: "text", Text: "facts: the sky is blue"}}, got.System); diff != "" {
		t.Errorf("system (-want +got):\n%s", diff)
	}
	want := []fakeserver.MessagesMessage{
		{Role: "user", Content: fakeserver.Blocks{{Type: "text", Text: "first"}, {Type: "text", Text: "second"}}},
		{Role: "assistant", Content: fakeserver.Blocks{{Type: "text", Text: "calling"}, {Type: "tool_use", ID: "a", Name: "t", Input: json.RawMessage(`{"x":1}`)}, {Type: "tool_use", ID: "b", Name: "t", Input: json.RawMessage(`{}`)}}},
		{Role: "user", Content: fakeserver.Blocks{
			{Type: "tool_result", ToolUseID: "a", Content: fakeserver.Blocks{{Type: "text", Text: "one"}}},
			{Type: "tool_result", ToolUseID: "b"},
			{Type: "text", Text: "[2 earlier messages omitted]"},
		}},
		{Role: "assistant", Content: fakeserver.Blocks{{Type: "text", Text: "done?"}}},
		{Role: "user", Content: fakeserver.Blocks{{Type: "text", Text: "yes"}}},
	}
	if diff := cmp.Diff(want, got.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	var schema map[string]any
	if err := json.Unmarshal(got.Tools[0].InputSchema, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("a tool without a schema got %s", got.Tools[0].InputSchema)
	}
}

func TestToolChoiceAndThinkingBudget(t *testing.T) {
	tools := []provider.ToolSpec{{Name: "calc", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		name      string
		choice    string
		maxOut    int
		wantType  string // tool_choice.type sent
		wantThink string // thinking sent: "" none, else type/budget
	}{
		{"auto", "auto", 8000, "auto", "enabled/4000"},
		{"none", "none", 8000, "none", "enabled/4000"},
		{"required_drops_thinking", "required", 8000, "any", ""},
		{"named_drops_thinking", "calc", 8000, "tool", ""},
		{"budget_lowered_below_max_tokens", "auto", 2000, "auto", "enabled/1999"},
		{"no_room_for_thinking", "auto", 1024, "auto", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 4000 }, fakeserver.Text("ok"))
			req := ask("x")
			req.Tools, req.ToolChoice, req.MaxOutputTokens = tools, tc.choice, tc.maxOut
			if _, _, err := s.call(t, req); err != nil {
				t.Fatal(err)
			}
			got := s.server.Requests()[0].Anthropic
			if got.ToolChoice == nil || got.ToolChoice.Type != tc.wantType || got.MaxTokens != int64(tc.maxOut) {
				t.Errorf("tool_choice %+v, max_tokens %d", got.ToolChoice, got.MaxTokens)
			}
			think := ""
			if got.Thinking != nil {
				think = got.Thinking.Type + "/" + strconv.FormatInt(got.Thinking.BudgetTokens, 10)
			}
			if think != tc.wantThink {
				t.Errorf("thinking %q, want %q", think, tc.wantThink)
			}
		})
	}
	t.Run("tool_turn_begun_without_thinking", func(t *testing.T) {
		// The turn in progress began without thinking (its call had
		// no room for it): thinking cannot start in its middle.
		s := newSetup(t, func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 2048 }, fakeserver.Text("ok"))
		req := ask("x")
		req.Tools, req.MaxOutputTokens = tools, 8000
		req.Messages = append(req.Messages,
			provider.Message{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "t1", Name: "calc", Arguments: "{}"}}},
			provider.Message{Role: provider.ToolRole, ToolCallID: "t1", Content: "1"})
		if _, _, err := s.call(t, req); err != nil {
			t.Fatal(err)
		}
		if got := s.server.Requests()[0].Anthropic.Thinking; got != nil {
			t.Errorf("thinking %+v sent in the middle of a tool-use turn begun without it", got)
		}
	})
	t.Run("unknown_tool", func(t *testing.T) {
		s := newSetup(t, nil)
		req := ask("x")
		req.Tools, req.ToolChoice = tools, "nope"
		_, _, err := s.call(t, req)
		wantKind(t, err, provider.InvalidRequest, "tool_choice")
	})
	t.Run("adaptive_and_cache", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Thinking = ThinkingAdaptive; c.PromptCache = "1h" }, fakeserver.Text("ok"))
		if _, _, err := s.call(t, ask("x")); err != nil {
			t.Fatal(err)
		}
		got := s.server.Requests()[0].Anthropic
		if got.Thinking == nil || got.Thinking.Type != "adaptive" || got.CacheControl == nil || got.CacheControl.TTL != "1h" || got.CacheControl.Type != "ephemeral" {
			t.Errorf("thinking %+v, cache_control %+v", got.Thinking, got.CacheControl)
		}
	})
}

func TestPlainRequests(t *testing.T) {
	s := newSetup(t, func(c *Config) { c.Streaming = false },
		fakeserver.Reply{Reasoning: "hm", Content: "Checking.", ToolCalls: []fakeserver.ToolCall{{ID: "toolu_1", Name: "calc", Arguments: `{"a":1}`}},
			Usage: &provider.Usage{PromptTokens: 50, CompletionTokens: 5, CacheReadTokens: 40}})
	resp, ev, err := s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Response{
		Content: "Checking.", Reasoning: "hm", ToolCalls: []provider.ToolCall{{ID: "toolu_1", Name: "calc", Arguments: `{"a":1}`}},
		Usage:      provider.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55, CacheReadTokens: 40},
		UsageKnown: true, FinishReason: "tool_use", ID: "msg_fake", Model: "claude-test",
		Thinking: []provider.Thinking{{Text: "hm", Signature: fakeserver.ThinkingSignature("hm")}},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(events{content: []string{"Checking."}, reasoning: []string{"hm"}, calls: []string{"calc", `{"a":1}`}}, ev, cmp.AllowUnexported(events{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s.server.Requests()[0].Anthropic.Stream {
		t.Error("a plain request asked for a stream")
	}
}

// Every error type Anthropic sends maps to the kind the openai provider
// uses for the same failure, whether it came as a response or inside the
// stream after a 200; an error inside the stream reports no HTTP status,
// since none was sent for it.
func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		typ       string
		status    int
		kind      provider.ErrorKind
		retryable bool
	}{
		{"authentication_error", 401, provider.AuthenticationFailed, false},
		{"permission_error", 403, provider.AuthenticationFailed, false},
		{"not_found_error", 404, provider.ModelUnavailable, false},
		{"invalid_request_error", 400, provider.InvalidRequest, false},
		{"request_too_large", 413, provider.InvalidRequest, false},
		{"billing_error", 402, provider.RateLimited, false},
		{"rate_limit_error", 429, provider.RateLimited, true},
		{"api_error", 500, provider.TransportFailed, true},
		{"timeout_error", 504, provider.TransportFailed, true},
		{"overloaded_error", 529, provider.TransportFailed, true},
	} {
		for _, where := range []string{"response", "stream"} {
			t.Run(tc.typ+"/"+where, func(t *testing.T) {
				reply := fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: tc.status, ErrorType: tc.typ, ErrorMessage: "it failed"}
				if where == "stream" {
					reply = fakeserver.Reply{Content: "never", Fault: fakeserver.FaultErrorInStream, EventsBeforeFault: 1, ErrorType: tc.typ, ErrorMessage: "it failed"}
				}
				s := newSetup(t, func(c *Config) { c.Retry.MaxAttempts = 2 }, reply, fakeserver.Text("recovered"))
				resp, _, err := s.call(t, ask("x"))
				if tc.retryable {
					if err != nil || resp.Content != "recovered" || len(s.server.Requests()) != 2 {
						t.Fatalf("resp %+v, err %v after %d requests; want a retry that recovers", resp, err, len(s.server.Requests()))
					}
					return
				}
				pe := wantKind(t, err, tc.kind, tc.typ)
				if len(s.server.Requests()) != 1 {
					t.Errorf("%d requests; %s is not retried", len(s.server.Requests()), tc.typ)
				}
				wantStatus := tc.status
				if where == "stream" {
					wantStatus = 0
				}
				if pe.StatusCode != wantStatus || strings.Contains(err.Error(), "HTTP 200") || !strings.Contains(err.Error(), "it failed") {
					t.Errorf("err %q with status %d, want status %d and the server's message", err, pe.StatusCode, wantStatus)
				}
			})
		}
	}
}

func TestErrorTypesExhaustRetries(t *testing.T) {
	for _, tc := range []struct {
		reply fakeserver.Reply
		kind  provider.ErrorKind
	}{
		{fakeserver.Reply{Fault: fakeserver.FaultErrorInStream, ErrorType: "overloaded_error"}, provider.TransportFailed},
		{fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: 529, ErrorType: "overloaded_error"}, provider.TransportFailed},
		{fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}, provider.RateLimited},
		{fakeserver.Reply{Fault: fakeserver.FaultServerError}, provider.TransportFailed},
	} {
		t.Run(tc.reply.Fault.String(), func(t *testing.T) {
			s := newSetup(t, nil, tc.reply, tc.reply, tc.reply, fakeserver.Text("too late"))
			_, _, err := s.call(t, ask("x"))
			wantKind(t, err, tc.kind, "")
			if n := len(s.server.Requests()); n != 3 {
				t.Errorf("%d requests, want max_attempts = 3", n)
			}
		})
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfter: 2 * time.Second}, fakeserver.Text("ok"))
	resp, _, err := s.call(t, ask("x"))
	if err != nil || resp.Content != "ok" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second}, s.sleeps.got()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	t.Run("beyond_max_backoff", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Retry.MaxBackoff = plan.Duration(time.Second) },
			fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfter: time.Minute})
		_, _, err := s.call(t, ask("x"))
		if pe := wantKind(t, err, provider.RateLimited, "rate_limit_error"); pe.RetryAfter != time.Minute || pe.StatusCode != 429 {
			t.Errorf("err = %+v", pe)
		}
		if len(s.sleeps.got()) != 0 || len(s.server.Requests()) != 1 {
			t.Errorf("waited %v over %d requests; want to give up at once", s.sleeps.got(), len(s.server.Requests()))
		}
	})
}

func TestRetryBacksOffExponentially(t *testing.T) {
	s := newSetup(t, func(c *Config) { c.Retry.MaxAttempts = 4 },
		fakeserver.Reply{Fault: fakeserver.FaultServerError}, fakeserver.Reply{Fault: fakeserver.FaultReset},
		fakeserver.Reply{Fault: fakeserver.FaultServerError}, fakeserver.Text("ok"))
	if _, _, err := s.call(t, ask("x")); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if diff := cmp.Diff(want, s.sleeps.got()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// An error inside the stream after text was delivered is not retried: the
// caller would see the text twice.
func TestStreamErrorAfterTextIsNotRetried(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"seen", "lost"}, Fault: fakeserver.FaultErrorInStream, EventsBeforeFault: 4, ErrorType: "overloaded_error"}, fakeserver.Text("never"))
	_, ev, err := s.call(t, ask("x"))
	wantKind(t, err, provider.TransportFailed, "overloaded_error")
	if diff := cmp.Diff([]string{"seen"}, ev.content); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if len(s.server.Requests()) != 1 {
		t.Error("a stream that had delivered text was retried")
	}
}

func TestTimeouts(t *testing.T) {
	const short = plan.Duration(30 * time.Millisecond)
	for _, tc := range []struct {
		name     string
		timeouts plan.ModelTimeouts
		stream   bool
		reply    fakeserver.Reply
		detail   string
	}{
		{"first_event", plan.ModelTimeouts{FirstEvent: short}, true, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultStallBeforeFirstEvent}, "first_event"},
		{"first_event_plain", plan.ModelTimeouts{FirstEvent: short}, false, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultStallBeforeFirstEvent}, "first_event"},
		{"idle", plan.ModelTimeouts{Idle: short}, true, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 4}, "idle"},
		{"idle_after_first_event", plan.ModelTimeouts{FirstEvent: plan.Duration(hangGuard), Idle: short}, true, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream}, "idle"},
		{"total", plan.ModelTimeouts{Total: short}, true, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream}, "total"},
		{"total_plain", plan.ModelTimeouts{Total: short}, false, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultStallBeforeFirstEvent}, "total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, func(c *Config) { c.Timeouts = tc.timeouts; c.Streaming = tc.stream }, tc.reply)
			_, _, err := s.call(t, ask("x"))
			wantKind(t, err, provider.Timeout, tc.detail)
			if n := len(s.server.Requests()); n != 1 {
				t.Errorf("%d requests; a timeout is not retried", n)
			}
		})
	}
}

// timeoutDialer fails each dial once the dial's deadline has passed, with
// an i/o timeout of its own rather than the context's error, as a real
// dialer's socket deadline can fire before the context's timer: a connect
// timeout must be named so every time, and not retried.
type timeoutDialer struct{}

func (timeoutDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	if d, ok := ctx.Deadline(); ok {
		time.Sleep(time.Until(d))
	}
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
}

func TestConnectTimeoutIsDeterministic(t *testing.T) {
	for _, dial := range []struct {
		name string
		fn   func(ctx context.Context, network, addr string) (net.Conn, error)
	}{
		{"socket_deadline", timeoutDialer{}.DialContext},
		{"context", func(ctx context.Context, _, _ string) (net.Conn, error) { <-ctx.Done(); return nil, ctx.Err() }},
	} {
		t.Run(dial.name, func(t *testing.T) {
			sl := &sleeps{}
			m, err := New(Config{
				BaseURL: "http://127.0.0.1:9", Model: "m", Streaming: true,
				Timeouts:   plan.ModelTimeouts{Connect: plan.Duration(5 * time.Millisecond)},
				Retry:      plan.TransportRetry{MaxAttempts: 3},
				HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dial.fn}},
				Sleep:      sl.sleep,
			})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 25 {
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				_, err = m.Stream(ctx, ask("x"), nil)
				cancel()
				if provider.KindOf(err) != provider.Timeout || !errors.Is(err, &provider.Error{Kind: provider.Timeout, Detail: "connect"}) {
					t.Fatalf("run %d: err = %v, want timeout (connect)", i, err)
				}
			}
			if len(sl.got()) != 0 {
				t.Errorf("a connect timeout was retried (waits %v)", sl.got())
			}
		})
	}
}

func TestMalformedAndTruncated(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming }, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultMalformedJSON, EventsBeforeFault: 3})
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.MalformedResponse, "")
	}
	t.Run("truncated_before_text_is_retried", func(t *testing.T) {
		s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"lost"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 2}, fakeserver.Text("whole"))
		resp, ev, err := s.call(t, ask("x"))
		if err != nil || resp.Content != "whole" || !cmp.Equal(ev.content, []string{"whole"}) {
			t.Fatalf("resp %+v, deltas %q, err %v", resp, ev.content, err)
		}
	})
	t.Run("truncated_after_text_fails", func(t *testing.T) {
		s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"seen", "lost"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 4}, fakeserver.Text("never"))
		_, ev, err := s.call(t, ask("x"))
		wantKind(t, err, provider.TransportFailed, "truncated")
		if !cmp.Equal(ev.content, []string{"seen"}) || len(s.server.Requests()) != 1 {
			t.Errorf("deltas %q over %d requests", ev.content, len(s.server.Requests()))
		}
	})
	t.Run("truncated_plain", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Streaming = false; c.Retry.MaxAttempts = 1 }, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultTruncated})
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.TransportFailed, "")
	})
	t.Run("no_message_stop", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half\"}}\n\n"))
		}))
		defer ts.Close()
		m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Stream(context.Background(), ask("x"), nil)
		wantKind(t, err, provider.TransportFailed, "truncated")
	})
	t.Run("delta_for_a_block_never_started", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
		}))
		defer ts.Close()
		m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Stream(context.Background(), ask("x"), nil)
		wantKind(t, err, provider.MalformedResponse, "")
	})
}

func TestRefusalAndEmptyTurn(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Refusal: "I can't help with that."}, fakeserver.Reply{FinishReason: "max_tokens"})
	_, _, err := s.call(t, ask("x"))
	if pe := wantKind(t, err, provider.Refusal, ""); !strings.Contains(pe.Error(), "can't help") {
		t.Errorf("err = %v", pe)
	}
	_, _, err = s.call(t, ask("x"))
	wantKind(t, err, provider.EmptyResponse, "max_tokens")
}

func TestAuthenticationFailureNeverShowsTheKey(t *testing.T) {
	s := newSetup(t, nil, fakeserver.ErrorReply(401, "invalid_api_key", "invalid x-api-key: "+testKey))
	_, _, err := s.call(t, ask("x"))
	pe := wantKind(t, err, provider.AuthenticationFailed, "authentication_error")
	if pe.StatusCode != 401 || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("err = %v", err)
	}
}

// The SDK reads ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and custom headers
// from the environment unless told not to; symbi's model block decides.
func TestEnvironmentIsNotRead(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-the-environment")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	s := newSetup(t, func(c *Config) { c.APIKey = "" }, fakeserver.Text("ok"))
	if _, _, err := s.call(t, ask("x")); err != nil {
		t.Fatal(err)
	}
	h := s.server.Requests()[0].Header
	if strings.Contains(h.Get("Authorization")+h.Get("X-Api-Key"), "environment") || h.Get("X-Leak") != "" {
		t.Errorf("the environment reached the request: %v", h)
	}
}

func TestNew(t *testing.T) {
	_, err := New(Config{BaseURL: "https://api.anthropic.com", Model: "m", APIKeyEnv: "ANTHROPIC_API_KEY"})
	if pe := wantKind(t, err, provider.MissingAPIKey, ""); !strings.Contains(pe.Error(), "set ANTHROPIC_API_KEY") {
		t.Errorf("err = %v", pe)
	}
	for _, tc := range []struct {
		cfg    Config
		detail string
	}{
		{Config{BaseURL: "ftp://x", Model: "m"}, "base_url"},
		{Config{BaseURL: "http://localhost"}, "name"},
		{Config{BaseURL: "http://localhost", Model: "m", Thinking: "sometimes"}, "thinking"},
		{Config{BaseURL: "http://localhost", Model: "m", Thinking: ThinkingEnabled, ThinkingBudget: 100}, "thinking_budget_tokens"},
		{Config{BaseURL: "http://localhost", Model: "m", MaxTokens: -1}, "max_tokens"},
		{Config{BaseURL: "http://localhost", Model: "m", PromptCache: "1d"}, "prompt_cache"},
	} {
		_, err := New(tc.cfg)
		wantKind(t, err, provider.InvalidRequest, tc.detail)
	}
	// A base URL written the OpenAI way, up to /v1, reaches /v1/messages.
	s := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("ok")))
	m, err := New(Config{BaseURL: s.AnthropicURL() + "/v1/", Model: "m", Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stream(context.Background(), ask("x"), nil); err != nil || s.Requests()[0].Path != "/v1/messages" {
		t.Fatalf("err %v, path %s", err, s.Requests()[0].Path)
	}
}

func TestCancellationMidStream(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) {
			if e.ContentDelta != "" {
				cancel()
			}
		})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || provider.KindOf(err) != "" {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Stream did not stop after cancellation")
	}
}

func TestConnectionReusedAfterMessageStop(t *testing.T) {
	late := fakeserver.Reply{Content: "x", EndDelay: 20 * time.Millisecond}
	s := newSetup(t, nil, late, late, late)
	for range 3 {
		if _, _, err := s.call(t, ask("x")); err != nil {
			t.Fatal(err)
		}
	}
	reqs := s.server.Requests()
	for _, r := range reqs[1:] {
		if r.RemoteAddr != reqs[0].RemoteAddr {
			t.Fatalf("request from %s after %s: the connection was not reused", r.RemoteAddr, reqs[0].RemoteAddr)
		}
	}
}

func TestConfigFromPlan(t *testing.T) {
	m := plan.Model{Name: "claude-x", APIKeyEnv: "K", Capabilities: []string{"tools"}, MaxTokens: 2000, Thinking: ThinkingEnabled, ThinkingBudgetTokens: 1500, PromptCache: "5m", MaxResponseBytes: 4096}
	got := ConfigFromPlan(m, "http://x", "key")
	want := Config{BaseURL: "http://x", APIKey: "key", APIKeyEnv: "K", Model: "claude-x", MaxTokens: 2000, Thinking: ThinkingEnabled, ThinkingBudget: 1500, PromptCache: "5m", MaxResponseBytes: 4096}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}
