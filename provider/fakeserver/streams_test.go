package fakeserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// raw posts one chat request and returns the status and the body as sent.
func raw(t *testing.T, reply Reply, stream bool) (int, string) {
	t.Helper()
	s := New(t, WithReplies(reply))
	body, _ := json.Marshal(map[string]any{
		"model": "fake-model", "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": "hi"}},
	})
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// events splits a stream's body into its data: payloads.
func events(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if p, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, p)
		}
	}
	return out
}

func TestErrorInStreamWireFormat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply Reply
		last  string // the last event, exactly
	}{
		{"openai", Reply{ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "quota"},
			`{"error":{"message":"quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
		{"code null", Reply{ErrorType: "api_error", ErrorMessage: "boom"},
			`{"error":{"message":"boom","type":"api_error","param":null,"code":null}}`},
		{"numeric code", Reply{ErrorType: "InternalServerError", ErrorNumericCode: 500, ErrorMessage: "dead"},
			`{"error":{"message":"dead","type":"InternalServerError","param":null,"code":500}}`},
		{"in a chunk", Reply{ErrorInChunk: true, ErrorCode: "server_error", ErrorMessage: "Provider disconnected"},
			`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","error":{"message":"Provider disconnected","param":null,"code":"server_error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.reply
			r.Fault = FaultErrorInStream
			r.Chunks = []string{"never"}
			status, body := raw(t, r, true)
			evs := events(body)
			if status != 200 || len(evs) != 2 {
				t.Fatalf("status %d, events %q; want 200, the role chunk and the error", status, evs)
			}
			if evs[1] != tc.last {
				t.Errorf("error event\n got %s\nwant %s", evs[1], tc.last)
			}
			if strings.Contains(body, "[DONE]") || strings.Contains(body, "never") {
				t.Errorf("the stream went on after its error:\n%s", body)
			}
		})
	}
	status, body := raw(t, Reply{Fault: FaultErrorInStream, ErrorCode: "insufficient_quota", ErrorMessage: "quota"}, false)
	if want := `{"error":{"message":"quota","param":null,"code":"insufficient_quota"}}`; status != 200 || body != want {
		t.Errorf("plain: %d %s; want 200 %s", status, body, want)
	}
}

func TestNoFinishReasonStillEndsWithDone(t *testing.T) {
	_, body := raw(t, Reply{Chunks: []string{"a"}, NoFinishReason: true}, true)
	evs := events(body)
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" {
		t.Fatalf("events %q: want [DONE] last", evs)
	}
	for _, e := range evs {
		if strings.Contains(e, `"finish_reason":"`) {
			t.Errorf("an event has a finish reason: %s", e)
		}
	}
	_, body = raw(t, Reply{Content: "a", NoFinishReason: true}, false)
	if !strings.Contains(body, `"finish_reason":null`) {
		t.Errorf("plain: %s", body)
	}
}

func TestReasoningFields(t *testing.T) {
	for _, tc := range []struct {
		as   ReasoningField
		want string // the reasoning part of the delta
	}{
		{ReasoningContent, `"reasoning_content":"think"`},
		{ReasoningText, `"reasoning":"think"`},
		{ReasoningDetails, `"reasoning":"think","reasoning_details":[{"type":"reasoning.text","text":"think","format":"unknown","index":0}]`},
		{ReasoningSummary, `"reasoning_details":[{"type":"reasoning.summary","summary":"think","format":"openai-responses-v1","index":0}]`},
	} {
		_, body := raw(t, Reply{Reasoning: "think", Content: "a", ReasoningAs: tc.as}, true)
		evs := events(body)
		if len(evs) < 3 || !strings.Contains(evs[1], `"delta":{`+tc.want+`}`) || !strings.Contains(evs[2], `"content":"a"`) {
			t.Errorf("%d: events %q; want the reasoning (%s) before the content", tc.as, evs, tc.want)
		}
		_, body = raw(t, Reply{Reasoning: "think", Content: "a", ReasoningAs: tc.as}, false)
		if !strings.Contains(body, `"message":{"role":"assistant",`+tc.want+`,"content":"a"`) {
			t.Errorf("%d: plain %s; want %s", tc.as, body, tc.want)
		}
	}
	_, body := raw(t, Reply{ReasoningChunks: []string{"a", "b"}, Content: "c"}, true)
	if evs := events(body); len(evs) < 4 || !strings.Contains(evs[1], `"reasoning_content":"a"`) || !strings.Contains(evs[2], `"reasoning_content":"b"`) {
		t.Errorf("reasoning chunks: %q", evs)
	}
}
