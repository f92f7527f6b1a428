package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata/wire")

// captureTransport records every request it is sent and answers with a
// server error, so that nothing else happens.
type captureTransport struct {
	mu   sync.Mutex
	reqs []captured
}

type captured struct {
	url    string
	header http.Header
	body   []byte
}

func (c *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	c.mu.Lock()
	c.reqs = append(c.reqs, captured{url: req.URL.String(), header: req.Header.Clone(), body: body})
	c.mu.Unlock()
	return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"type":"error","error":{"type":"invalid_request_error","message":"captured"}}`)), Request: req}, nil
}

// wireCases are requests in every shape the provider encodes. Their bodies,
// as the official SDK (github.com/anthropics/anthropic-sdk-go/v2 v2.17.0)
// encoded them when the provider still used it, are the golden files in
// testdata/wire: the provider's own encoding must send the same bytes.
func wireCases() []struct {
	name string
	cfg  func(*Config)
	req  provider.Request
} {
	calc := provider.ToolSpec{Name: "calc", Description: "evaluates <b>&</b> \"expressions\"", Parameters: json.RawMessage(`{ "type": "object",
  "properties": {"expression": {"type": "string", "description": "a <tag> & more"}}, "required": ["expression"] }`)}
	bare := provider.ToolSpec{Name: "clock"}
	convo := []provider.Message{
		{Role: provider.System, Content: "be brief"},
		{Role: provider.System, Content: ""},
		{Role: provider.System, Content: "facts: <html> & \u2028 \"quotes\""},
		{Role: provider.User, Content: "first"},
		{Role: provider.User, Content: "second\nline"},
		{Role: provider.Assistant, Content: "calling", ToolCalls: []provider.ToolCall{{ID: "a", Name: "calc", Arguments: ` {"expression": "6*7", "x": [1, 2.50, "<"]} `}, {ID: "b", Name: "calc", Arguments: `{not json`}, {ID: "c", Name: "clock", Arguments: ``}, {ID: "d", Name: "clock", Arguments: `[1]`}}},
		{Role: provider.ToolRole, ToolCallID: "a", Name: "calc", Content: "42"},
		{Role: provider.ToolRole, ToolCallID: "b", Name: "calc", Content: ""},
		{Role: provider.System, Content: "[2 earlier messages omitted]"},
		{Role: provider.ToolRole, ToolCallID: "c", Name: "clock", Content: "noon"},
		{Role: provider.ToolRole, ToolCallID: "d", Name: "clock", Content: "é ☃ \x7f"},
		{Role: provider.Assistant, Content: ""},
		{Role: provider.Assistant, Content: "done?", Thinking: []provider.Thinking{{Text: "unsigned"}}},
		{Role: provider.User, Content: "yes"},
	}
	thinkingTurn := []provider.Message{
		{Role: provider.User, Content: "6*7?"},
		{Role: provider.Assistant, Thinking: []provider.Thinking{{Text: "six sevens", Signature: "sig_1"}, {Redacted: "c2VjcmV0"}, {Text: "", Signature: "sig_2"}}, ToolCalls: []provider.ToolCall{{ID: "t9", Name: "calc", Arguments: `{"expression":"6*7"}`}}},
		{Role: provider.ToolRole, ToolCallID: "t9", Content: "42"},
	}
	toolTurnNoThinking := []provider.Message{
		{Role: provider.User, Content: "x"},
		{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "t1", Name: "calc", Arguments: "{}"}}},
		{Role: provider.ToolRole, ToolCallID: "t1", Content: "1"},
	}
	return []struct {
		name string
		cfg  func(*Config)
		req  provider.Request
	}{
		{"minimal", nil, provider.Request{Messages: []provider.Message{{Role: provider.User, Content: "hi"}}}},
		{"minimal_plain", func(c *Config) { c.Streaming = false }, provider.Request{Messages: []provider.Message{{Role: provider.User, Content: "hi"}}}},
		{"conversation", nil, provider.Request{Messages: convo, Tools: []provider.ToolSpec{calc, bare}}},
		{"conversation_plain", func(c *Config) { c.Streaming = false }, provider.Request{Messages: convo, Tools: []provider.ToolSpec{calc, bare}, ToolChoice: "auto", MaxOutputTokens: 77, Model: "claude-other"}},
		{"tool_choice_none", nil, provider.Request{Messages: convo[3:5], Tools: []provider.ToolSpec{calc}, ToolChoice: "none"}},
		{"tool_choice_required", func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 2048 }, provider.Request{Messages: convo[3:5], Tools: []provider.ToolSpec{calc}, ToolChoice: "required"}},
		{"tool_choice_named", nil, provider.Request{Messages: convo[3:5], Tools: []provider.ToolSpec{calc, bare}, ToolChoice: "clock"}},
		{"tool_choice_without_tools", nil, provider.Request{Messages: convo[3:5], ToolChoice: "auto"}},
		{"thinking_enabled", func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 2048; c.MaxTokens = 9000 }, provider.Request{Messages: thinkingTurn, Tools: []provider.ToolSpec{calc}}},
		{"thinking_budget_lowered", func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 4000 }, provider.Request{Messages: thinkingTurn, Tools: []provider.ToolSpec{calc}, MaxOutputTokens: 2000}},
		{"thinking_no_room", func(c *Config) { c.Thinking = ThinkingEnabled; c.ThinkingBudget = 4000 }, provider.Request{Messages: thinkingTurn, MaxOutputTokens: 1024}},
		{"thinking_adaptive_cache_1h", func(c *Config) { c.Thinking = ThinkingAdaptive; c.PromptCache = "1h" }, provider.Request{Messages: thinkingTurn}},
		{"thinking_mid_tool_turn", func(c *Config) { c.Thinking = ThinkingAdaptive; c.PromptCache = "5m" }, provider.Request{Messages: toolTurnNoThinking, Tools: []provider.ToolSpec{calc}}},
		{"cache_none", func(c *Config) { c.PromptCache = "none" }, provider.Request{Messages: convo[:4], Temperature: ptrFloat(0.5), JSON: true}},
	}
}

func ptrFloat(f float64) *float64 { return &f }

// TestWireBodies: the provider sends, for every shape of request, the body
// and the headers the official SDK sent; see wireCases.
func TestWireBodies(t *testing.T) {
	for _, tc := range wireCases() {
		t.Run(tc.name, func(t *testing.T) {
			ct := &captureTransport{}
			cfg := Config{BaseURL: "https://api.example.com/base/", APIKey: testKey, Model: "claude-test", Streaming: true,
				HTTPClient: &http.Client{Transport: ct}, Retry: plan.TransportRetry{MaxAttempts: 1}}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Stream(context.Background(), tc.req, nil); provider.KindOf(err) != provider.InvalidRequest {
				t.Fatalf("err = %v, want the capture's invalid_request_error", err)
			}
			if len(ct.reqs) != 1 {
				t.Fatalf("%d requests", len(ct.reqs))
			}
			got := ct.reqs[0]
			var keys []string
			for k := range got.header {
				if !strings.HasPrefix(k, "X-Stainless-") && k != "User-Agent" {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			var head strings.Builder
			head.WriteString("POST " + got.url + "\n")
			for _, k := range keys {
				head.WriteString(k + ": " + strings.Join(got.header[k], ", ") + "\n")
			}
			golden := head.String() + "\n" + string(got.body) + "\n"
			path := filepath.Join("testdata", "wire", tc.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(golden), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, []byte(golden)) {
				t.Errorf("the request sent differs from %s:\ngot:\n%s\nwant:\n%s", path, golden, want)
			}
		})
	}
}

// TestThinkingDeprecationWarning: a request with thinking enabled to a
// model that deprecates it prints the SDK's warning, once an attempt; one
// with adaptive thinking, or to another model, prints nothing.
func TestThinkingDeprecationWarning(t *testing.T) {
	var buf bytes.Buffer
	saved := warnings
	warnings = &buf
	defer func() { warnings = saved }()
	for _, tc := range []struct {
		model, thinking string
		want            int
	}{
		{"claude-opus-4-6", ThinkingEnabled, 2},
		{"claude-opus-4-6", ThinkingAdaptive, 0},
		{"claude-sonnet-4-5", ThinkingEnabled, 0},
	} {
		buf.Reset()
		ct := &captureTransport{}
		m, err := New(Config{BaseURL: "http://localhost", Model: tc.model, Thinking: tc.thinking, ThinkingBudget: 2048, Streaming: true,
			HTTPClient: &http.Client{Transport: ct}, Retry: plan.TransportRetry{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		m.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.User, Content: "x"}}}, nil)
		m.Stream(context.Background(), provider.Request{Messages: []provider.Message{{Role: provider.User, Content: "x"}}}, nil)
		if got := strings.Count(buf.String(), "'thinking.type=enabled' is deprecated"); got != tc.want {
			t.Errorf("%s with %s: %d warnings, want %d: %q", tc.model, tc.thinking, got, tc.want, buf.String())
		}
	}
}

// TestSchemaThatIsNotJSON: a tool schema that is not JSON cannot be
// encoded; the call fails as an invalid request and nothing is sent.
func TestSchemaThatIsNotJSON(t *testing.T) {
	ct := &captureTransport{}
	m, err := New(Config{BaseURL: "http://localhost", Model: "m", Streaming: true, HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Messages: []provider.Message{{Role: provider.User, Content: "x"}},
		Tools: []provider.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{"type":`)}}}
	_, err = m.Stream(context.Background(), req, nil)
	if provider.KindOf(err) != provider.InvalidRequest || len(ct.reqs) != 0 {
		t.Errorf("err %v after %d requests; want invalid_request before any", err, len(ct.reqs))
	}
}
