package scripted

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"empty", ``, "empty input"},
		{"not an object", `[]`, "want an object, got JSON array"},
		{"no turns", `{"turns":[]}`, "turns: at least one turn is required"},
		{"unknown top field", `{"turns":[{"content":"x"}],"turn":1}`, `unknown field "turn"`},
		{"unknown turn field", `{"turns":[{"content":"x"},{"contnet":"y"}]}`, `turns[1]: unknown field "contnet"`},
		{"tool call without name", `{"turns":[{},{},{},{"tool_calls":[{"id":"c1"}]}]}`, "turns[3].tool_calls[0]: name is required"},
		{"unknown tool call field", `{"turns":[{"tool_calls":[{"name":"a"},{"name":"b","args":{}}]}]}`, `turns[0].tool_calls[1]: unknown field "args"`},
		{"bad regexp", `{"turns":[{"when":"(","content":"x"}]}`, "turns[0].when: error parsing regexp"},
		{"bad latency", `{"turns":[{"content":"x","latency":"soon"}]}`, `turns[0].latency: invalid duration "soon"`},
		{"negative latency", `{"turns":[{"content":"x","latency":"-1s"}]}`, `turns[0].latency: invalid duration "-1s"`},
		{"bare number latency", `{"turns":[{"content":"x","latency":"30"}]}`, `turns[0].latency: invalid duration "30"`},
		{"chunks disagree", `{"turns":[{"content":"Hello","chunks":["He","y"]}]}`, "turns[0].chunks: the chunks do not join to content"},
		{"unknown error kind", `{"turns":[{"error":{"kind":"oops"}}]}`, `turns[0].error: kind: "oops" is not one of`},
		{"error and content", `{"turns":[{"content":"x","error":{"kind":"refusal"}}]}`, "turns[0].error: a turn with an error has no content"},
		{"bad retry_after", `{"turns":[{"error":{"kind":"rate_limited","retry_after":"x"}}]}`, `turns[0].error: retry_after: invalid duration "x"`},
		{"negative retry_after", `{"turns":[{"error":{"kind":"rate_limited","retry_after":"-1s"}}]}`, `turns[0].error: retry_after: invalid duration "-1s"`},
		{"bad timeout detail", `{"turns":[{"error":{"kind":"timeout","detail":"forever"}}]}`, "turns[0].error: detail:"},
		{"negative usage", `{"turns":[{"content":"x","usage":{"prompt_tokens":-1}}]}`, "turns[0].usage: prompt_tokens: must not be negative"},
		{"usage of wrong type", `{"turns":[{"content":"x","usage":{"prompt_tokens":"ten"}}]}`, "turns[0].usage: prompt_tokens: want an integer"},
		{"content of wrong type", `{"turns":[{"content":7}]}`, "turns[0]: content: want a string"},
		{"bad on_exhausted", `{"turns":[{"content":"x"}],"on_exhausted":"loop"}`, `on_exhausted: "loop" is not one of`},
		{"trailing data", `{"turns":[{"content":"x"}]} {}`, "unexpected data after the JSON object"},
		{"invalid JSON", `{"turns":[{"content":"x"}`, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.script))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	s, err := Parse([]byte(`{
		"turns": [
			{"content": "Hello", "chunks": ["Hel", "lo"], "usage": {"prompt_tokens": 10, "completion_tokens": 3}, "latency": "50ms"},
			{"tool_calls": [
				{"id": "c1", "name": "calculator", "arguments": {"expression": "6*7"}},
				{"name": "shell", "arguments": "{not json"},
				{"name": "clock"}
			]},
			{"error": {"kind": "rate_limited", "retry_after": "1s", "message": "slow down", "status_code": 429}},
			{"when": "^ping$", "chunks": ["po", "ng"]}
		],
		"on_exhausted": "repeat_last"
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Turns[0]; got.Latency != 50*time.Millisecond || got.Usage == nil || got.Usage.TotalTokens != 13 {
		t.Errorf("turn 0 = %+v, want latency 50ms and total 13 (prompt + completion)", got)
	}
	wantCalls := []provider.ToolCall{
		{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`},
		{ID: "call_1_1", Name: "shell", Arguments: "{not json"},
		{ID: "call_1_2", Name: "clock", Arguments: "{}"},
	}
	if diff := cmp.Diff(wantCalls, s.Turns[1].ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if e := s.Turns[2].Error; e == nil || e.Kind != provider.RateLimited || e.RetryAfter != time.Second || e.StatusCode != 429 {
		t.Errorf("turn 2 error = %+v", e)
	}
	if got := s.Turns[3].Content; got != "pong" {
		t.Errorf("turn 3 content = %q, want the chunks joined", got)
	}
	if s.OnExhausted != OnExhaustedRepeatLast {
		t.Errorf("on_exhausted = %q", s.OnExhausted)
	}
}

func mustModel(t *testing.T, script string) *Model {
	t.Helper()
	s, err := Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return New(s)
}

func user(text string) provider.Request {
	return provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.System, Content: "be brief"}, {Role: provider.User, Content: text}}}
}

func TestStreamPlaysTurnsInOrder(t *testing.T) {
	m := mustModel(t, `{"turns":[
		{"chunks":["Hel","lo"],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":20}},
		{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]},
		{"content":"forty two"}
	]}`)
	ctx := context.Background()

	var deltas []string
	resp, err := m.Stream(ctx, user("hi"), func(e provider.Event) { deltas = append(deltas, e.ContentDelta) })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Hel", "lo"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	want := provider.Response{Content: "Hello", Usage: provider.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 20}, UsageKnown: true, FinishReason: "stop"}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("turn 0 (-want +got):\n%s", diff)
	}

	resp, err = m.Stream(ctx, user("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != `{"expression":"6*7"}` {
		t.Errorf("turn 1 = %+v", resp)
	}

	deltas = nil
	resp, err = m.Stream(ctx, user("hi"), func(e provider.Event) { deltas = append(deltas, e.ContentDelta) })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"forty two"}, deltas); diff != "" {
		t.Errorf("content without chunks streams as one delta (-want +got):\n%s", diff)
	}

	_, err = m.Stream(ctx, user("hi"), nil)
	if !errors.Is(err, ErrExhausted) || provider.KindOf(err) != provider.InvalidRequest {
		t.Errorf("after the last turn: err = %v, want ErrExhausted", err)
	}
	if got := len(m.Requests()); got != 4 {
		t.Errorf("recorded %d requests, want 4", got)
	}
}

func TestStreamEstimatesUsage(t *testing.T) {
	m := mustModel(t, `{"turns":[{"content":"abcdefgh"}]}`)
	resp, err := m.Stream(context.Background(), user("abcd"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// "be brief" (8 bytes) is 2 tokens, "abcd" 1, "abcdefgh" 2.
	want := provider.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}
	if diff := cmp.Diff(want, resp.Usage); diff != "" || !resp.UsageKnown {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestStreamErrorsAndEmptyTurns(t *testing.T) {
	m := mustModel(t, `{"turns":[
		{"error":{"kind":"rate_limited","retry_after":"1s"}},
		{"error":{"kind":"timeout","detail":"idle"}},
		{}
	]}`)
	ctx := context.Background()
	_, err := m.Stream(ctx, user("x"), nil)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.RateLimited || pe.RetryAfter != time.Second {
		t.Errorf("err = %v, want rate_limited with retry after 1s", err)
	}
	_, err = m.Stream(ctx, user("x"), nil)
	if !errors.Is(err, &provider.Error{Kind: provider.Timeout, Detail: "idle"}) {
		t.Errorf("err = %v, want an idle timeout", err)
	}
	_, err = m.Stream(ctx, user("x"), nil)
	if provider.KindOf(err) != provider.EmptyResponse {
		t.Errorf("empty turn: err = %v, want empty_response", err)
	}
}

func TestWhenSelectsTurns(t *testing.T) {
	m := mustModel(t, `{"turns":[
		{"when":"(?i)critic","content":"looks fine"},
		{"when":"^42$","content":"The answer is 42."},
		{"content":"first default"},
		{"content":"second default"}
	],"on_exhausted":"repeat_last"}`)
	ctx := context.Background()
	ask := func(req provider.Request) string {
		t.Helper()
		resp, err := m.Stream(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Content
	}
	toolResult := provider.Request{Messages: []provider.Message{
		{Role: provider.User, Content: "what is 6*7?"},
		{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "calculator", Arguments: "{}"}}},
		{Role: provider.ToolRole, ToolCallID: "c1", Name: "calculator", Content: "42"},
	}}
	if got := ask(user("hello")); got != "first default" {
		t.Errorf("hello got %q", got)
	}
	if got := ask(toolResult); got != "The answer is 42." {
		t.Errorf("tool result got %q", got)
	}
	if got := ask(user("Critic: review this")); got != "looks fine" {
		t.Errorf("critic got %q", got)
	}
	if got := ask(user("hello")); got != "second default" {
		t.Errorf("second hello got %q", got)
	}
	// Exhausted: the last fitting turn repeats.
	if got := ask(user("hello")); got != "second default" {
		t.Errorf("repeat got %q", got)
	}
}

func TestConcurrentCallsConsumeEachTurnOnce(t *testing.T) {
	const n = 16
	var b strings.Builder
	b.WriteString(`{"turns":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"content":"` + string(rune('a'+i)) + `"}`)
	}
	b.WriteString(`]}`)
	m := mustModel(t, b.String())

	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			resp, err := m.Stream(context.Background(), user("x"), nil)
			if err != nil {
				t.Error(err)
			}
			got[i] = resp.Content
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, c := range got {
		if seen[c] {
			t.Errorf("turn %q played twice", c)
		}
		seen[c] = true
	}
	if len(m.Requests()) != n {
		t.Errorf("recorded %d requests, want %d", len(m.Requests()), n)
	}
}

func TestLatencyHonoursCancellation(t *testing.T) {
	m := mustModel(t, `{"turns":[{"content":"late","latency":"1h"}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Stream(ctx, user("x"), nil)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not return after cancellation")
	}
}

func TestRequestsAreCopies(t *testing.T) {
	m := mustModel(t, `{"turns":[{"content":"x"}]}`)
	req := user("original")
	if _, err := m.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	req.Messages[1].Content = "changed"
	if got := m.Requests()[0].Messages[1].Content; got != "original" {
		t.Errorf("recorded request changed with the caller's slice: %q", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if err := os.WriteFile(path, []byte(`{"turns":[{"content":"hi"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Stream(context.Background(), user("x"), nil); err != nil || resp.Content != "hi" {
		t.Errorf("Stream = %+v, %v", resp, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"turns":[{"tool_calls":[{}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.json: turns[0].tool_calls[0]: name is required") {
		t.Errorf("Load(bad) err = %v", err)
	}
	// A bad duration is read by the same rules as the language's, and the
	// error names the file and the field.
	slow := filepath.Join(dir, "slow.json")
	if err := os.WriteFile(slow, []byte(`{"turns":[{"content":"x","latency":"5 min"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(slow)
	if err == nil || !strings.Contains(err.Error(), `slow.json: turns[0].latency: invalid duration "5 min"`) {
		t.Errorf("Load(slow) err = %v", err)
	}
	if !errors.Is(err, stdlib.ErrBadDuration) {
		t.Errorf("Load(slow) err = %v, want it to wrap stdlib.ErrBadDuration", err)
	}
}

// TestExampleScripts keeps the scripts under examples/scripts that this
// package documents valid.
func TestExampleScripts(t *testing.T) {
	paths, err := filepath.Glob("../../examples/scripts/provider_*.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := Load(p); err != nil {
			t.Error(err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"turns":[{"content":"Hello","chunks":["Hel","lo"],"usage":{"prompt_tokens":10,"completion_tokens":3},"latency":"50ms"}]}`,
		`{"turns":[{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]}]}`,
		`{"turns":[{"tool_calls":[{"name":"x","arguments":"{bad"}]}],"on_exhausted":"repeat_last"}`,
		`{"turns":[{"error":{"kind":"rate_limited","retry_after":"1s","message":"m"}}]}`,
		`{"turns":[{"when":"^a+$","content":"x"},{}]}`,
		`{"turns":[{"when_temperature":0.35,"chunks":["a","b"]},{"content":"c"}]}`,
		`{"turns":[{"error":{"kind":"timeout","detail":"idle","status_code":504}}]}`,
		`{"turns":null}`, `[]`, `"x"`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		m := New(s)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // no turn's latency may make the fuzzer wait
		for range s.Turns {
			_, _ = m.Stream(ctx, user("x"), func(provider.Event) {})
		}
		// Each turn, played alone, gives what it says: its content as the
		// deltas and the response, its tool calls, or its error.
		for i, turn := range s.Turns {
			if turn.Latency > 0 || turn.When != nil || turn.WhenTemperature != nil {
				continue
			}
			var streamed strings.Builder
			resp, err := New(&Script{Turns: []Turn{turn}, OnExhausted: OnExhaustedError}).Stream(context.Background(), user("x"),
				func(ev provider.Event) { streamed.WriteString(ev.ContentDelta) })
			var pe *provider.Error
			switch {
			case turn.Error != nil:
				if !errors.As(err, &pe) || pe.Kind != turn.Error.Kind {
					t.Fatalf("turn %d: error %v, want one of kind %s", i, err, turn.Error.Kind)
				}
			case turn.Content == "" && len(turn.ToolCalls) == 0:
				if !errors.As(err, &pe) || pe.Kind != provider.EmptyResponse {
					t.Fatalf("turn %d, empty: error %v, want %s", i, err, provider.EmptyResponse)
				}
			case err != nil:
				t.Fatalf("turn %d: %v", i, err)
			case resp.Content != turn.Content || streamed.String() != turn.Content:
				t.Fatalf("turn %d: content %q, streamed %q; the script says %q", i, resp.Content, streamed.String(), turn.Content)
			case !cmp.Equal(resp.ToolCalls, turn.ToolCalls):
				t.Fatalf("turn %d: tool calls %v; the script says %v", i, resp.ToolCalls, turn.ToolCalls)
			}
		}
	})
}

func TestFromPlan(t *testing.T) {
	content := []byte(`{"turns":[{"content":"from the plan"}]}`)
	ref := plan.NewFileRef("scripts/s.json", content)
	m, err := FromPlan(plan.Model{Address: "model.offline", Provider: "scripted", Script: &ref}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := m.Stream(context.Background(), user("x"), nil); err != nil || resp.Content != "from the plan" {
		t.Errorf("Stream = %+v, %v", resp, err)
	}
	if _, err := FromPlan(plan.Model{Address: "model.offline"}, "."); err == nil || !strings.Contains(err.Error(), "model.offline") {
		t.Errorf("no script: err = %v", err)
	}
	bad := plan.NewFileRef("scripts/bad.json", []byte(`{"turns":[{"contnet":"x"}]}`))
	if _, err := FromPlan(plan.Model{Address: "model.offline", Script: &bad}, "."); err == nil || !strings.Contains(err.Error(), `scripts/bad.json: turns[0]: unknown field "contnet"`) {
		t.Errorf("bad script: err = %v", err)
	}
}

func BenchmarkStream(b *testing.B) {
	s, err := Parse([]byte(`{"turns":[{"chunks":["The ","answer ","is ","42."]}],"on_exhausted":"repeat_last"}`))
	if err != nil {
		b.Fatal(err)
	}
	m := New(s)
	req := user("What is 6*7?")
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Stream(ctx, req, func(provider.Event) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestWhenTemperatureSeparatesCandidates(t *testing.T) {
	m := mustModel(t, `{"turns":[
		{"when_temperature":0.5,"content":"warm"},
		{"when_temperature":0.2,"content":"cool"},
		{"content":"any"}
	]}`)
	var wg sync.WaitGroup
	got := map[float64]string{}
	var mu sync.Mutex
	for _, temp := range []float64{0.2, 0.5} {
		wg.Go(func() {
			req := user("same question")
			req.Temperature = &temp
			resp, err := m.Stream(context.Background(), req, nil)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			got[temp] = resp.Content
			mu.Unlock()
		})
	}
	wg.Wait()
	if diff := cmp.Diff(map[float64]string{0.2: "cool", 0.5: "warm"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if resp, err := m.Stream(context.Background(), user("no temperature"), nil); err != nil || resp.Content != "any" {
		t.Errorf("a request without a temperature got %+v, %v", resp, err)
	}
}
