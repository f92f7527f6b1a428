package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
)

var providerUsage = provider.Usage{PromptTokens: 100, CompletionTokens: 5, CacheReadTokens: 80, CacheWriteTokens: 10}

func postMessages(t *testing.T, s *Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.AnthropicURL()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The server refuses what the real API refuses, naming the rule, and
// leaves its queue for the requests after.
func TestMessagesRequestRules(t *testing.T) {
	sig := ThinkingSignature("hm")
	for _, tc := range []struct {
		name, body, rule string
	}{
		{"no_max_tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"no_messages", `{"model":"m","max_tokens":10,"messages":[]}`, "at least one message"},
		{"assistant_first", `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"hi"}]}`, "first message must use the user role"},
		{"same_role_twice", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, "roles must alternate"},
		{"system_role", `{"model":"m","max_tokens":10,"messages":[{"role":"system","content":"a"}]}`, "is not user or assistant"},
		{"empty_text", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":""}]}`, "text content blocks must be non-empty"},
		{"unanswered_tool_use", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},{"role":"user","content":"b"}]}`, "without tool_result blocks"},
		{"result_after_text", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},{"role":"user","content":[{"type":"text","text":"b"},{"type":"tool_result","tool_use_id":"t1"}]}]}`, "must come first"},
		{"unknown_tool_use_id", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9"}]}]}`, "unexpected tool_use_id"},
		{"input_not_object", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":[1]}]}]}`, "must be a JSON object"},
		{"budget_not_below_max_tokens", `{"model":"m","max_tokens":2000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"a"}]}`, "less than max_tokens"},
		{"thinking_with_forced_tool", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2000},"tools":[{"name":"x","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"a"}]}`, "forces tool use"},
		{"changed_thinking", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"changed","signature":"` + sig + `"},{"type":"text","text":"b"}]},{"role":"user","content":"c"}]}`, "invalid signature"},
		{"tool_turn_without_thinking", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`, "must start with a thinking block"},
		{"bad_tool_name", `{"model":"m","max_tokens":10,"tools":[{"name":"a.b","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"a"}]}`, "does not match"},
		{"not_json", `{`, "not a messages request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t, WithReplies(Text("kept")))
			status, body := postMessages(t, s, tc.body)
			if status != 400 || !strings.Contains(body, "invalid_request_error") || !strings.Contains(body, tc.rule) {
				t.Fatalf("status %d, body %s; want 400 naming %q", status, body, tc.rule)
			}
			status, body = postMessages(t, s, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"}]}`)
			if status != 200 || !strings.Contains(body, `"kept"`) {
				t.Errorf("the next request got %d %s, not the queued reply", status, body)
			}
		})
	}
	t.Run("a_whole_tool_turn_passes", func(t *testing.T) {
		s := New(t, WithReplies(Text("ok")))
		body := `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":2000},"system":[{"type":"text","text":"s"}],
			"messages":[{"role":"user","content":"a"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"` + sig + `"},{"type":"redacted_thinking","data":"x"},{"type":"text","text":"b"},{"type":"tool_use","id":"t1","name":"x","input":{"q":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}]},{"type":"text","text":"c"}]}]}`
		if status, resp := postMessages(t, s, body); status != 200 {
			t.Fatalf("status %d: %s", status, resp)
		}
		got := s.Requests()[0].Anthropic
		if got.Messages[1].Content[3].ID != "t1" || got.Messages[2].Content[0].Content[0].Text != "r" || got.System[0].Text != "s" {
			t.Errorf("decoded %+v", got)
		}
	})
}

// The plain answer carries every block, the stop reason Anthropic names and
// usage with the cache apart.
func TestMessagesPlainWireFormat(t *testing.T) {
	s := New(t, WithReplies(Reply{Reasoning: "hm", Content: "x", ToolCalls: []ToolCall{{Name: "calc", Arguments: `{"a":1}`}}, Usage: &providerUsage}))
	status, body := postMessages(t, s, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"a"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var msg struct {
		Content []struct {
			Type, Text, Thinking, Signature, ID, Name string
			Input                                     json.RawMessage
		}
		StopReason string `json:"stop_reason"`
		Usage      map[string]int64
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 3 || msg.Content[0].Signature != ThinkingSignature("hm") || msg.Content[1].Text != "x" || msg.Content[2].ID != "toolu_fake_0" || string(msg.Content[2].Input) != `{"a":1}` {
		t.Errorf("content %+v", msg.Content)
	}
	if msg.StopReason != "tool_use" || msg.Usage["input_tokens"] != 10 || msg.Usage["cache_read_input_tokens"] != 80 || msg.Usage["cache_creation_input_tokens"] != 10 || msg.Usage["output_tokens"] != 5 {
		t.Errorf("stop %q, usage %v", msg.StopReason, msg.Usage)
	}
}

// FaultErrorInStream in the Chat Completions format is a data: line with an
// error object after a 200, which go-openai reports as an API error.
func TestChatStreamError(t *testing.T) {
	s := New(t, WithReplies(Reply{Chunks: []string{"a", "b"}, Fault: FaultErrorInStream, EventsBeforeFault: 2, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "quota"}))
	stream, err := client(s).CreateChatCompletionStream(context.Background(), chatRequest())
	if err != nil {
		t.Fatal(err)
	}
	content, _, _, err := drain(t, stream)
	var apiErr *openai.APIError
	if content != "a" || !errors.As(err, &apiErr) || apiErr.Type != "insufficient_quota" || apiErr.Message != "quota" {
		t.Errorf("content %q, err %v", content, err)
	}
}
