package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// hangGuard bounds every call so that a hang fails the test instead of
// stalling the suite; no test relies on it to pass.
const hangGuard = 10 * time.Second

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
		BaseURL:   s.URL(),
		APIKey:    "sk-test-secret-key",
		Model:     "fake-model",
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

// call runs Stream under hangGuard and collects the deltas.
func (s setup) call(t *testing.T, req provider.Request) (provider.Response, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var deltas []string
	resp, err := s.model.Stream(ctx, req, func(e provider.Event) {
		if e.Started || e.ToolCall != nil && e.ToolCallDelta == "" {
			return // no content, and nothing counted (TestLifecycleEvents)
		}
		deltas = append(deltas, e.ContentDelta)
	})
	if ctx.Err() != nil {
		t.Fatalf("Stream hung until the test's guard: %v", err)
	}
	return resp, deltas, err
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

func TestStreamDeliversDeltasAndUsage(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{
		Chunks: []string{"The ", "answer ", "is 42."},
		// Reported totals are passed on as they are, even when they do not add up.
		Usage: &provider.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 12},
	})
	resp, deltas, err := s.call(t, ask("6*7?"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"The ", "answer ", "is 42."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	want := provider.Response{Content: "The answer is 42.", Usage: provider.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 12}, UsageKnown: true, FinishReason: "stop", ID: "chatcmpl-fake", Model: "fake-model"}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	reqs := s.server.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0].Chat
	if !got.Stream || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage || got.Model != "fake-model" || len(got.Messages) != 2 || got.Messages[1].Content != "6*7?" {
		t.Errorf("sent %+v", got)
	}
	if h := reqs[0].Header.Get("Authorization"); h != "Bearer sk-test-secret-key" {
		t.Errorf("Authorization = %q", h)
	}
}

func TestStreamAssemblesToolCalls(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{
		Chunks: []string{"Checking."},
		ToolCalls: []fakeserver.ToolCall{
			{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			{ID: "call_b", Name: "web_search", Arguments: `{"query":"héllo wörld"}`, ArgumentChunks: []string{`{"que`, `ry":"hé`, `llo wörld"}`}},
			{ID: "call_c", Name: "clock", Arguments: `{}`},
		},
	})
	resp, _, err := s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ToolCall{
		{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`},
		{ID: "call_b", Name: "web_search", Arguments: `{"query":"héllo wörld"}`},
		{ID: "call_c", Name: "clock", Arguments: `{}`},
	}
	if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if resp.FinishReason != "tool_calls" || resp.Content != "Checking." || !resp.UsageKnown {
		t.Errorf("response = %+v", resp)
	}
}

func TestTurnBuilderInterleavedAndUnindexedCalls(t *testing.T) {
	idx := func(i int) *int { return &i }
	piece := func(calls ...goopenai.ToolCall) chunk {
		return chunk{Choices: []chunkChoice{{Delta: chunkDelta{ToolCalls: calls}}}}
	}
	fn := func(name, args string) goopenai.FunctionCall {
		return goopenai.FunctionCall{Name: name, Arguments: args}
	}

	var b turnBuilder
	b.add(piece(goopenai.ToolCall{Index: idx(1), ID: "b", Function: fn("second", `{"y"`)}))
	b.add(piece(goopenai.ToolCall{Index: idx(0), ID: "a", Function: fn("first", `{"x"`)}))
	b.add(piece(goopenai.ToolCall{Index: idx(1), Function: fn("second", `:2}`)}, goopenai.ToolCall{Index: idx(0), Function: fn("", `:1}`)}))
	want := []provider.ToolCall{{ID: "a", Name: "first", Arguments: `{"x":1}`}, {ID: "b", Name: "second", Arguments: `{"y":2}`}}
	if diff := cmp.Diff(want, b.response().ToolCalls); diff != "" {
		t.Errorf("interleaved (-want +got):\n%s", diff)
	}

	// Servers that leave out the index send each call whole, with its own id.
	var u turnBuilder
	u.add(piece(goopenai.ToolCall{ID: "a", Function: fn("first", `{}`)}))
	u.add(piece(goopenai.ToolCall{ID: "b", Function: fn("second", `{"q":`)}))
	u.add(piece(goopenai.ToolCall{Function: fn("", `1}`)}))
	want = []provider.ToolCall{{ID: "a", Name: "first", Arguments: `{}`}, {ID: "b", Name: "second", Arguments: `{"q":1}`}}
	if diff := cmp.Diff(want, u.response().ToolCalls); diff != "" {
		t.Errorf("unindexed (-want +got):\n%s", diff)
	}
}

func TestNonStreaming(t *testing.T) {
	s := newSetup(t, func(c *Config) { c.Streaming = false },
		fakeserver.Reply{Content: "forty-two", Usage: &provider.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}, NoUsage: true},
	)
	resp, deltas, err := s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	want := provider.Response{Content: "forty-two", Usage: provider.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}, UsageKnown: true, FinishReason: "stop", ID: "chatcmpl-fake", Model: "fake-model"}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"forty-two"}, deltas); diff != "" {
		t.Errorf("the whole content is one event (-want +got):\n%s", diff)
	}
	resp, _, err = s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != `{"expression":"6*7"}` || resp.UsageKnown {
		t.Errorf("response = %+v, want one tool call and no usage", resp)
	}
	for _, r := range s.server.Requests() {
		if r.Chat.Stream || r.Chat.StreamOptions != nil {
			t.Errorf("non-streaming mode sent stream=%v options=%+v", r.Chat.Stream, r.Chat.StreamOptions)
		}
	}
}

func TestRequestMapping(t *testing.T) {
	zero := 0.0
	tools := []provider.ToolSpec{
		{Name: "calculator", Description: "Evaluate arithmetic", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}}}`)},
		{Name: "clock", Description: "Time"},
	}
	for _, tc := range []struct {
		choice string
		want   any
	}{
		{"auto", "auto"},
		{"required", "required"},
		{"none", "none"},
		{"calculator", map[string]any{"type": "function", "function": map[string]any{"name": "calculator"}}},
	} {
		t.Run(tc.choice, func(t *testing.T) {
			s := newSetup(t, nil, fakeserver.Text("ok"))
			req := ask("x")
			req.Messages = append(req.Messages,
				provider.Message{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "clock", Arguments: "{}"}}},
				provider.Message{Role: provider.ToolRole, ToolCallID: "c1", Name: "clock", Content: "noon"})
			req.Tools = tools
			req.ToolChoice = tc.choice
			req.Temperature = &zero
			req.MaxOutputTokens = 256
			req.JSON = true
			if _, _, err := s.call(t, req); err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			if err := json.Unmarshal(s.server.Requests()[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, body["tool_choice"]); diff != "" {
				t.Errorf("tool_choice (-want +got):\n%s", diff)
			}
			if body["max_tokens"] != 256.0 || body["response_format"].(map[string]any)["type"] != "json_object" {
				t.Errorf("max_tokens %v, response_format %v", body["max_tokens"], body["response_format"])
			}
			if temp, ok := body["temperature"].(float64); !ok || temp > 1e-6 {
				t.Errorf("temperature 0 sent as %v", body["temperature"])
			}
			chat := s.server.Requests()[0].Chat
			if p := chat.Tools[1].Function.Parameters; p == nil {
				t.Error("a tool without parameters was sent with null parameters")
			}
			msgs := chat.Messages
			if msgs[2].ToolCalls[0].ID != "c1" || msgs[3].Role != "tool" || msgs[3].ToolCallID != "c1" || msgs[3].Content != "noon" {
				t.Errorf("history sent as %+v", msgs)
			}
		})
	}

	s := newSetup(t, nil)
	req := ask("x")
	req.Tools = tools
	req.ToolChoice = "shell"
	_, _, err := s.call(t, req)
	wantKind(t, err, provider.InvalidRequest, "tool_choice")
	if len(s.server.Requests()) != 0 {
		t.Error("an invalid request reached the server")
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	s := newSetup(t, nil,
		fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfter: 2 * time.Second},
		fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0.25"},
		fakeserver.Text("finally"))
	resp, _, err := s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "finally" {
		t.Errorf("content = %q", resp.Content)
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second, 250 * time.Millisecond}, s.sleeps.got()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestRetryBacksOffExponentially(t *testing.T) {
	s := newSetup(t, func(c *Config) {
		c.Retry = plan.TransportRetry{MaxAttempts: 4, Backoff: plan.Duration(100 * time.Millisecond), MaxBackoff: plan.Duration(250 * time.Millisecond)}
	},
		fakeserver.Reply{Fault: fakeserver.FaultServerError},
		fakeserver.Reply{Fault: fakeserver.FaultReset},
		fakeserver.Reply{Fault: fakeserver.FaultServerError},
		fakeserver.Text("recovered"))
	resp, _, err := s.call(t, ask("x"))
	if err != nil || resp.Content != "recovered" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond}
	if diff := cmp.Diff(want, s.sleeps.got()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestBackoffJitter(t *testing.T) {
	for _, tc := range []struct {
		rand float64
		want time.Duration
	}{{0, 80 * time.Millisecond}, {0.5, 100 * time.Millisecond}, {0.75, 110 * time.Millisecond}} {
		m, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Rand: func() float64 { return tc.rand },
			Retry: plan.TransportRetry{MaxAttempts: 2, Backoff: plan.Duration(100 * time.Millisecond), Jitter: 0.2}})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := m.backoff(context.Background(), 1, errors.New("x"))
		if !ok || got != tc.want {
			t.Errorf("rand %v: backoff %v, %v; want %v", tc.rand, got, ok, tc.want)
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	t.Run("rate_limited", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Retry.MaxAttempts = 2 },
			fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfter: time.Second},
			fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfter: 3 * time.Second})
		_, _, err := s.call(t, ask("x"))
		pe := wantKind(t, err, provider.RateLimited, "")
		if pe.RetryAfter != 3*time.Second || pe.StatusCode != 429 {
			t.Errorf("err = %+v, want the last Retry-After and HTTP 429", pe)
		}
		if !errors.Is(err, &provider.Error{Kind: provider.RateLimited}) {
			t.Error("errors.Is does not match the kind")
		}
	})
	t.Run("server_error", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Retry.MaxAttempts = 2 },
			fakeserver.Reply{Fault: fakeserver.FaultServerError}, fakeserver.Reply{Fault: fakeserver.FaultServerError})
		_, _, err := s.call(t, ask("x"))
		if pe := wantKind(t, err, provider.TransportFailed, ""); pe.StatusCode != 500 {
			t.Errorf("status %d", pe.StatusCode)
		}
		if n := len(s.server.Requests()); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})
	t.Run("reset", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Retry.MaxAttempts = 1 }, fakeserver.Reply{Fault: fakeserver.FaultReset})
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.TransportFailed, "")
	})
	t.Run("retry_after_beyond_max_backoff", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Retry.MaxBackoff = plan.Duration(time.Second) },
			fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfter: time.Minute})
		_, _, err := s.call(t, ask("x"))
		if pe := wantKind(t, err, provider.RateLimited, ""); pe.RetryAfter != time.Minute {
			t.Errorf("RetryAfter = %v", pe.RetryAfter)
		}
		if len(s.sleeps.got()) != 0 || len(s.server.Requests()) != 1 {
			t.Errorf("waited %v over %d requests; want to give up at once", s.sleeps.got(), len(s.server.Requests()))
		}
	})
	t.Run("insufficient_quota", func(t *testing.T) {
		s := newSetup(t, nil, fakeserver.ErrorReply(429, "insufficient_quota", "You exceeded your current quota"))
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.RateLimited, "insufficient_quota")
		if len(s.server.Requests()) != 1 {
			t.Error("an exhausted quota was retried")
		}
	})
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
		{"idle", plan.ModelTimeouts{Idle: short}, true, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 2}, "idle"},
		{"idle_after_first_event", plan.ModelTimeouts{FirstEvent: plan.Duration(hangGuard), Idle: short}, true, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream}, "idle"},
		{"total", plan.ModelTimeouts{Total: short}, true, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream}, "total"},
		{"total_plain", plan.ModelTimeouts{Total: short}, false, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultStallBeforeFirstEvent}, "total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t, func(c *Config) { c.Timeouts = tc.timeouts; c.Streaming = tc.stream }, tc.reply)
			_, _, err := s.call(t, ask("x"))
			wantKind(t, err, provider.Timeout, tc.detail)
			if !errors.Is(err, &provider.Error{Kind: provider.Timeout, Detail: tc.detail}) {
				t.Error("errors.Is does not match kind and detail")
			}
			if n := len(s.server.Requests()); n != 1 {
				t.Errorf("%d requests; a timeout is not retried", n)
			}
		})
	}
}

func TestSlowStreamWithinIdleTimeoutCompletes(t *testing.T) {
	s := newSetup(t, func(c *Config) { c.Timeouts.Idle = plan.Duration(hangGuard) },
		fakeserver.Reply{Chunks: []string{"a", "b", "c"}, ChunkDelay: 5 * time.Millisecond})
	resp, _, err := s.call(t, ask("x"))
	if err != nil || resp.Content != "abc" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
}

// go-openai stops reading at [DONE]; a body closed before the chunked
// terminator that follows it takes the connection with it. Stream reads
// the body to its end, so one connection serves every call.
func TestConnectionReusedWhenTheBodyEndsAfterDone(t *testing.T) {
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

// A server that never ends the body after [DONE] costs the call at most
// the idle timeout (the turn is complete, so it is not an error), and the
// connection is given up.
func TestBodyThatNeverEndsAfterDone(t *testing.T) {
	const idle = 500 * time.Millisecond
	s := newSetup(t, func(c *Config) { c.Timeouts.Idle = plan.Duration(idle) },
		fakeserver.Reply{Content: "x", EndDelay: time.Hour}, fakeserver.Text("y"))
	start := time.Now()
	resp, _, err := s.call(t, ask("x"))
	if err != nil || resp.Content != "x" {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	if d := time.Since(start); d > hangGuard/2 {
		t.Errorf("the call took %s waiting for the body's end", d)
	}
	if resp, _, err := s.call(t, ask("y")); err != nil || resp.Content != "y" {
		t.Fatalf("next call: resp %+v, err %v", resp, err)
	}
}

func TestConnectTimeout(t *testing.T) {
	// A dialer that never connects stands in for an unreachable host.
	never := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	m, err := New(Config{
		BaseURL: "http://127.0.0.1:9/v1", Model: "m", Streaming: true,
		Timeouts:   plan.ModelTimeouts{Connect: plan.Duration(30 * time.Millisecond)},
		HTTPClient: &http.Client{Transport: never},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err = m.Stream(ctx, ask("x"), nil)
	wantKind(t, err, provider.Timeout, "connect")
}

func TestMalformedJSON(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming }, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultMalformedJSON})
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.MalformedResponse, "")
	}
}

func TestTruncatedStream(t *testing.T) {
	t.Run("before content is retried", func(t *testing.T) {
		s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"lost"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 1}, fakeserver.Text("whole"))
		resp, deltas, err := s.call(t, ask("x"))
		if err != nil || resp.Content != "whole" {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
		if diff := cmp.Diff([]string{"whole"}, deltas); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
	})
	t.Run("after content fails", func(t *testing.T) {
		s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"seen", "lost"}, Fault: fakeserver.FaultTruncated, EventsBeforeFault: 2}, fakeserver.Text("never"))
		_, deltas, err := s.call(t, ask("x"))
		wantKind(t, err, provider.TransportFailed, "truncated")
		if diff := cmp.Diff([]string{"seen"}, deltas); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
		if len(s.server.Requests()) != 1 {
			t.Error("a stream that had delivered content was retried")
		}
	})
	t.Run("plain", func(t *testing.T) {
		s := newSetup(t, func(c *Config) { c.Streaming = false; c.Retry.MaxAttempts = 1 }, fakeserver.Reply{Content: "x", Fault: fakeserver.FaultTruncated})
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.TransportFailed, "truncated")
	})
}

func TestStreamEndingWithoutFinishReason(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n"))
	}))
	defer ts.Close()
	m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Stream(context.Background(), ask("x"), nil)
	wantKind(t, err, provider.TransportFailed, "truncated")
}

func TestCancellationMidStream(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"a", "b"}, Fault: fakeserver.FaultStallMidStream, EventsBeforeFault: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.model.Stream(ctx, ask("x"), func(provider.Event) { cancel() })
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if provider.KindOf(err) != "" {
			t.Errorf("the caller's cancellation came back as a provider error: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Stream did not stop after cancellation")
	}
}

func TestRefusal(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming },
			fakeserver.Reply{Refusal: "I can't help with that."},
			fakeserver.Reply{Content: "partial", FinishReason: "content_filter"})
		_, _, err := s.call(t, ask("x"))
		pe := wantKind(t, err, provider.Refusal, "")
		if !strings.Contains(pe.Error(), "I can't help with that.") {
			t.Errorf("refusal text lost: %v", pe)
		}
		_, _, err = s.call(t, ask("x"))
		wantKind(t, err, provider.Refusal, "content_filter")
	}
}

func TestEmptyTurn(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming }, fakeserver.Reply{})
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.EmptyResponse, "stop")
	}
}

func TestAuthenticationFailureNeverShowsTheKey(t *testing.T) {
	for _, status := range []int{401, 403} {
		s := newSetup(t, nil, fakeserver.ErrorReply(status, "invalid_api_key", "Incorrect API key provided: sk-test-secret-key."))
		_, _, err := s.call(t, ask("x"))
		pe := wantKind(t, err, provider.AuthenticationFailed, "")
		if pe.StatusCode != status {
			t.Errorf("status %d", pe.StatusCode)
		}
		if strings.Contains(err.Error(), "sk-test-secret-key") {
			t.Errorf("the API key is in the error: %v", err)
		}
		if len(s.server.Requests()) != 1 {
			t.Error("an authentication failure was retried")
		}
	}
}

func TestModelNotFound(t *testing.T) {
	for _, reply := range []fakeserver.Reply{
		fakeserver.ErrorReply(404, "model_not_found", "The model `nope` does not exist"),
		fakeserver.ErrorReply(400, "model_not_found", "The model `nope` does not exist"),
	} {
		s := newSetup(t, nil, reply)
		_, _, err := s.call(t, ask("x"))
		wantKind(t, err, provider.ModelUnavailable, "")
	}
}

func TestBadRequest(t *testing.T) {
	s := newSetup(t, nil, fakeserver.ErrorReply(400, "context_length_exceeded", "too long"))
	_, _, err := s.call(t, ask("x"))
	if pe := wantKind(t, err, provider.InvalidRequest, "context_length_exceeded"); pe.StatusCode != 400 {
		t.Errorf("status %d", pe.StatusCode)
	}
}

func TestNew(t *testing.T) {
	_, err := New(Config{BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY"})
	pe := wantKind(t, err, provider.MissingAPIKey, "")
	if !strings.Contains(pe.Error(), "OPENAI_API_KEY") {
		t.Errorf("the error does not say what to set: %v", pe)
	}
	_, err = New(Config{Model: "gpt-4o-mini"})
	wantKind(t, err, provider.MissingAPIKey, "")
	for _, base := range []string{"http://localhost:11434/v1", "http://127.0.0.1:8080/v1", "http://[::1]:1234/v1"} {
		if _, err := New(Config{BaseURL: base, Model: "llama3"}); err != nil {
			t.Errorf("%s: a loopback endpoint needs no key: %v", base, err)
		}
	}
	if _, err := New(Config{BaseURL: "http://gpu-box:8000/v1", Model: "m", AllowNoKey: true}); err != nil {
		t.Errorf("AllowNoKey: %v", err)
	}
	_, err = New(Config{BaseURL: "localhost:11434", Model: "m"})
	wantKind(t, err, provider.InvalidRequest, "base_url")
	_, err = New(Config{BaseURL: "http://localhost:1/v1"})
	wantKind(t, err, provider.InvalidRequest, "name")
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"150"}, "Retry-After": {"1"}}, 150 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Second).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-4"}}, 0},
		{http.Header{}, 0},
	} {
		if got := parseRetryAfter(tc.header, now); got != tc.want {
			t.Errorf("%v: got %v, want %v", tc.header, got, tc.want)
		}
	}
}

// TestConcurrentCalls shares one Model between goroutines, as best-of-N does.
func TestConcurrentCalls(t *testing.T) {
	s := fakeserver.New(t, fakeserver.WithHandler(func(n int, req fakeserver.Request) fakeserver.Reply {
		return fakeserver.Text("re: ", req.Chat.Messages[len(req.Chat.Messages)-1].Content)
	}))
	m, err := New(Config{BaseURL: s.URL(), Model: "m", Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			q := string(rune('a' + i))
			resp, err := m.Stream(ctx, ask(q), nil)
			if err != nil || resp.Content != "re: "+q {
				t.Errorf("call %d: %+v, %v", i, resp, err)
			}
		})
	}
	wg.Wait()
}

// FuzzResponse serves arbitrary bytes as an event stream or a plain body:
// whatever a server sends, Stream returns a response or a typed error, never
// a panic or a hang.
func FuzzResponse(f *testing.F) {
	for _, seed := range []string{
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"a\",\"function\":{\"name\":\"x\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":1}}\n\n",
		"data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n",
		"event: ping\n\n: comment\n\ndata: {not json\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"no\"},\"finish_reason\":\"stop\"}]}\n\n",
		"",
	} {
		f.Add([]byte(seed), true)
	}
	for _, seed := range []string{
		`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"x","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[]}`, `{"error":{"message":"x"}}`, `[1,2]`, `null`,
	} {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, streaming bool) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if streaming {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.Write(body)
		}))
		defer ts.Close()
		m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: streaming})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		resp, err := m.Stream(ctx, ask("x"), func(provider.Event) {})
		if ctx.Err() != nil {
			t.Fatal("Stream hung")
		}
		if err != nil && provider.KindOf(err) == "" {
			t.Fatalf("untyped error %v (%T)", err, err)
		}
		if err == nil && resp.Content == "" && len(resp.ToolCalls) == 0 {
			t.Fatal("an empty turn was returned without an error")
		}
	})
}

func BenchmarkStream(b *testing.B) {
	s := fakeserver.New(b, fakeserver.WithHandler(func(int, fakeserver.Request) fakeserver.Reply {
		return fakeserver.Reply{Chunks: []string{"The ", "answer ", "is ", "42."}}
	}))
	m, err := New(Config{BaseURL: s.URL(), Model: "m", Streaming: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Stream(ctx, ask("x"), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestConfigFromPlan(t *testing.T) {
	m := plan.Model{
		Address: "model.fast", Provider: "openai", Name: "gpt-4o-mini", APIKeyEnv: "OPENAI_API_KEY",
		Capabilities: []string{"tools", "json"},
		Timeouts:     plan.ModelTimeouts{Total: plan.Duration(time.Minute)},
		Retry:        plan.TransportRetry{MaxAttempts: 3},
	}
	want := Config{BaseURL: "https://example.test/v1", APIKey: "k", APIKeyEnv: "OPENAI_API_KEY", Model: "gpt-4o-mini", Timeouts: m.Timeouts, Retry: m.Retry}
	if diff := cmp.Diff(want, ConfigFromPlan(m, "https://example.test/v1", "k"), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".HTTPClient" }, cmp.Ignore())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	m.Capabilities = append(m.Capabilities, "streaming")
	if !ConfigFromPlan(m, "", "").Streaming {
		t.Error("a model with the streaming capability is not streamed")
	}
}

func TestReasoningIsDeliveredApart(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Reasoning: "6 times 7", Chunks: []string{"42"}})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var events []provider.Event
	resp, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) {
		if !e.Started {
			events = append(events, e)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.Event{{ReasoningDelta: "6 times 7"}, {ContentDelta: "42"}}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if resp.Content != "42" {
		t.Errorf("content = %q; reasoning is not part of the answer", resp.Content)
	}
}

func TestErrorInsideTheStream(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 {
			w.Write([]byte(`data: {"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}` + "\n\n"))
			return
		}
		w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer ts.Close()
	sl := &sleeps{}
	m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true, Sleep: sl.sleep, Retry: plan.TransportRetry{MaxAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Stream(context.Background(), ask("x"), nil)
	if err != nil || resp.Content != "ok" {
		t.Fatalf("an in-stream rate limit was not retried: %+v, %v", resp, err)
	}

	m, _ = New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
	mu.Lock()
	calls = 0
	mu.Unlock()
	_, err = m.Stream(context.Background(), ask("x"), nil)
	wantKind(t, err, provider.RateLimited, "rate_limit_exceeded")
}

func TestCallWithoutArgumentsGetsAnEmptyObject(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming }, fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "clock"}}})
		resp, _, err := s.call(t, ask("x"))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.ToolCalls[0].Arguments; got != "{}" {
			t.Errorf("streaming=%v: arguments %q, want {}", streaming, got)
		}
	}
}

// BenchmarkBestOfNShape runs 8 calls 4 at a time against 50 ms of server
// latency: ideally two latencies per op, whatever the client adds.
func BenchmarkBestOfNShape(b *testing.B) {
	s := fakeserver.New(b, fakeserver.WithLatency(50*time.Millisecond), fakeserver.WithHandler(func(int, fakeserver.Request) fakeserver.Reply {
		return fakeserver.Text("candidate")
	}))
	m, err := New(Config{BaseURL: s.URL(), Model: "m", Streaming: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		sem := make(chan struct{}, 4)
		var wg sync.WaitGroup
		for range 8 {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, err := m.Stream(ctx, ask("x"), nil); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
}

func TestUntrustedCertificateIsNotRetried(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ts.Close()
	sl := &sleeps{}
	m, err := New(Config{BaseURL: ts.URL + "/v1", Model: "m", AllowNoKey: true, Sleep: sl.sleep, Retry: plan.TransportRetry{MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err = m.Stream(ctx, ask("x"), nil)
	wantKind(t, err, provider.TransportFailed, "")
	if len(sl.got()) != 0 {
		t.Errorf("a certificate error was retried (waits %v)", sl.got())
	}
}
