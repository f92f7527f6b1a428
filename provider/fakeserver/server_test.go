package fakeserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
)

func client(s *Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = s.URL()
	return openai.NewClientWithConfig(cfg)
}

func chatRequest() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "What is 6*7?"}},
	}
}

// drain reads a stream to its end, returning the content, the tool call
// deltas and the usage.
func drain(t *testing.T, stream *openai.ChatCompletionStream) (string, []openai.ToolCall, *openai.Usage, error) {
	t.Helper()
	defer stream.Close()
	var content strings.Builder
	var calls []openai.ToolCall
	var usage *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return content.String(), calls, usage, nil
		}
		if err != nil {
			return content.String(), calls, usage, err
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
			calls = append(calls, c.Delta.ToolCalls...)
		}
	}
}

func TestStreamWireFormat(t *testing.T) {
	s := New(t, WithReplies(Reply{
		Chunks:    []string{"Let me ", "calculate."},
		ToolCalls: []ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}, {ID: "c2", Name: "clock", Arguments: `{}`, ArgumentChunks: []string{"{", "}"}}},
		Usage:     &provider.Usage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18},
	}))
	req := chatRequest()
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := client(s).CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	content, deltas, usage, err := drain(t, stream)
	if err != nil {
		t.Fatal(err)
	}
	if content != "Let me calculate." {
		t.Errorf("content = %q", content)
	}
	args := map[int]string{}
	names := map[int]string{}
	for _, d := range deltas {
		args[*d.Index] += d.Function.Arguments
		names[*d.Index] += d.Function.Name
	}
	if args[0] != `{"expression":"6*7"}` || args[1] != "{}" || names[0] != "calculator" || names[1] != "clock" {
		t.Errorf("assembled calls: names %v, arguments %v", names, args)
	}
	if len(deltas) < 5 {
		t.Errorf("got %d tool call deltas, want the arguments split across several", len(deltas))
	}
	if usage == nil || usage.TotalTokens != 18 {
		t.Errorf("usage = %+v, want the reported 18 total", usage)
	}
	got := s.Requests()
	if len(got) != 1 || !got[0].Chat.Stream || got[0].Chat.Messages[0].Content != "What is 6*7?" || got[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("recorded %+v", got)
	}
}

func TestPlainWireFormat(t *testing.T) {
	s := New(t, WithReplies(Reply{ToolCalls: []ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}}))
	resp, err := client(s).CreateChatCompletion(context.Background(), chatRequest())
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.Choices[0].Message
	if resp.Choices[0].FinishReason != openai.FinishReasonToolCalls || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != `{"expression":"6*7"}` {
		t.Errorf("response = %+v", resp)
	}
	if resp.Usage.TotalTokens == 0 {
		t.Errorf("usage not estimated: %+v", resp.Usage)
	}
}

func TestNoUsageWithoutIncludeUsage(t *testing.T) {
	s := New(t, WithReplies(Text("hi")))
	stream, err := client(s).CreateChatCompletionStream(context.Background(), chatRequest())
	if err != nil {
		t.Fatal(err)
	}
	_, _, usage, err := drain(t, stream)
	if err != nil || usage != nil {
		t.Errorf("usage = %+v, err = %v; want none when include_usage is unset", usage, err)
	}
}

func TestFaultsReachTheClient(t *testing.T) {
	for _, tc := range []struct {
		reply  Reply
		stream bool
		check  func(t *testing.T, err error)
	}{
		{Reply{Fault: FaultRateLimit, RetryAfter: 1500 * time.Millisecond}, true, wantStatus(429)},
		{Reply{Fault: FaultServerError}, false, wantStatus(500)},
		{ErrorReply(404, "model_not_found", "no such model"), true, wantStatus(404)},
		{Reply{Fault: FaultReset}, true, wantSomeError},
		{Reply{Fault: FaultReset}, false, wantSomeError},
		{Reply{Content: "x", Fault: FaultMalformedJSON}, true, wantSomeError},
		{Reply{Content: "x", Fault: FaultMalformedJSON}, false, wantSomeError},
		{Reply{Chunks: []string{"a", "b"}, Fault: FaultTruncated}, true, wantUnexpectedEOF},
		{Reply{Content: "x", Fault: FaultTruncated}, false, wantUnexpectedEOF},
	} {
		t.Run(tc.reply.Fault.String(), func(t *testing.T) {
			s := New(t, WithReplies(tc.reply))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var err error
			if tc.stream {
				var stream *openai.ChatCompletionStream
				stream, err = client(s).CreateChatCompletionStream(ctx, chatRequest())
				if err == nil {
					_, _, _, err = drain(t, stream)
				}
			} else {
				_, err = client(s).CreateChatCompletion(ctx, chatRequest())
			}
			tc.check(t, err)
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	s := New(t, WithReplies(Reply{Fault: FaultRateLimit, RetryAfter: 1500 * time.Millisecond}))
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After = %q, want 2 (whole seconds, rounded up)", got)
	}
}

func TestStallsEndWhenTheClientGivesUp(t *testing.T) {
	for _, f := range []Fault{FaultStallBeforeFirstEvent, FaultStallMidStream} {
		t.Run(f.String(), func(t *testing.T) {
			s := New(t, WithReplies(Reply{Chunks: []string{"a", "b"}, Fault: f}))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			stream, err := client(s).CreateChatCompletionStream(ctx, chatRequest())
			if err == nil {
				_, _, _, err = drain(t, stream)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want the client's deadline", err)
			}
		})
	}
}

func TestStallForResumes(t *testing.T) {
	s := New(t, WithReplies(Reply{Chunks: []string{"a", "b"}, Fault: FaultStallMidStream, StallFor: time.Millisecond}))
	stream, err := client(s).CreateChatCompletionStream(context.Background(), chatRequest())
	if err != nil {
		t.Fatal(err)
	}
	content, _, _, err := drain(t, stream)
	if err != nil || content != "ab" {
		t.Errorf("content %q, err %v", content, err)
	}
}

func TestCloseEndsStalledResponses(t *testing.T) {
	s := New(t, WithReplies(Reply{Content: "x", Fault: FaultStallBeforeFirstEvent}))
	done := make(chan error, 1)
	go func() {
		stream, err := client(s).CreateChatCompletionStream(context.Background(), chatRequest())
		if err == nil {
			_, _, _, err = drain(t, stream)
		}
		done <- err
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	s.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a stalled stream ended without an error when the server closed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the stalled response")
	}
}

// TestConcurrentRequestsAreNotSerialized holds every handler until all are in
// flight at once: it can only finish if the server serves them concurrently.
func TestConcurrentRequestsAreNotSerialized(t *testing.T) {
	const n = 8
	var wg sync.WaitGroup
	wg.Add(n)
	s := New(t, WithLatency(time.Millisecond), WithHandler(func(i int, req Request) Reply {
		wg.Done()
		wg.Wait()
		return Text("answer ", req.Chat.Messages[0].Content)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var clients sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		clients.Go(func() {
			req := chatRequest()
			req.Messages[0].Content = string(rune('a' + i))
			resp, err := client(s).CreateChatCompletion(ctx, req)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = resp.Choices[0].Message.Content
		})
	}
	clients.Wait()
	for i, g := range got {
		if want := "answer " + string(rune('a'+i)); g != want {
			t.Errorf("request %d got %q, want %q", i, g, want)
		}
	}
}

func TestUnscriptedRequestIsAnError(t *testing.T) {
	s := New(t)
	_, err := client(s).CreateChatCompletion(context.Background(), chatRequest())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || !strings.Contains(apiErr.Message, "no reply scripted") {
		t.Errorf("err = %v", err)
	}
}

func TestSplitKeepsRunes(t *testing.T) {
	for _, s := range []string{"", "ab", `{"q":"héllo wörld ✓"}`, "✓✓✓✓"} {
		pieces := split(s, 3)
		joined := strings.Join(pieces, "")
		if joined != s {
			t.Errorf("split(%q) joins to %q", s, joined)
		}
		for _, p := range pieces {
			if strings.ToValidUTF8(p, "?") != p {
				t.Errorf("split(%q) piece %q is not valid UTF-8", s, p)
			}
		}
	}
	if diff := cmp.Diff([]string{"ab", "cd", "e"}, split("abcde", 3)); diff != "" {
		t.Error(diff)
	}
}

func wantStatus(code int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != code {
			t.Errorf("err = %v, want HTTP %d", err, code)
		}
	}
}

func wantSomeError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Error("no error")
	}
}

func wantUnexpectedEOF(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want an unexpected EOF", err)
	}
}

// A request that does not decode must not use up the reply queued for the
// next one.
func TestMalformedRequestKeepsTheQueue(t *testing.T) {
	s := New(t, WithReplies(Text("first")))
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	resp, err = http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "first") {
		t.Errorf("second request got %s, want the queued reply", body)
	}
}
