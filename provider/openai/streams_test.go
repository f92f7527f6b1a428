package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestErrorInsideTheStreamIsClassifiedLikeAResponse sends, after a 200,
// the errors real servers send inside a stream, and the same errors as
// error responses: each is classified by its code and type the same way
// on both paths, retried or not the same way, and the in-stream one never
// names an HTTP status that was not on the wire.
func TestErrorInsideTheStreamIsClassifiedLikeAResponse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inStream  fakeserver.Reply // FaultErrorInStream
		response  *fakeserver.Reply
		kind      provider.ErrorKind
		detail    string
		retried   bool
		mustSay   []string // in the in-stream error's text
		mustNotBe []string
	}{
		{
			name:     "openai insufficient_quota",
			inStream: fakeserver.Reply{ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"},
			response: &fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"},
			kind:     provider.RateLimited, detail: "insufficient_quota",
			mustSay: []string{"You exceeded your current quota", "inside the stream"},
		},
		{
			name:     "openai invalid_api_key",
			inStream: fakeserver.Reply{ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided"},
			response: &fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: 401, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided"},
			kind:     provider.AuthenticationFailed, detail: "invalid_api_key",
			mustSay: []string{"Incorrect API key provided"},
		},
		{
			name:     "openai rate_limit_exceeded",
			inStream: fakeserver.Reply{ErrorType: "requests", ErrorCode: "rate_limit_exceeded", ErrorMessage: "Rate limit reached"},
			response: &fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: 429, ErrorType: "requests", ErrorCode: "rate_limit_exceeded", ErrorMessage: "Rate limit reached"},
			kind:     provider.RateLimited, detail: "rate_limit_exceeded", retried: true,
		},
		{
			name:     "openai server_error, code null",
			inStream: fakeserver.Reply{ErrorType: "server_error", ErrorMessage: "The server had an error"},
			response: &fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: 500, ErrorType: "server_error", ErrorMessage: "The server had an error"},
			kind:     provider.TransportFailed, retried: true,
			mustSay: []string{"type server_error", "The server had an error"}, mustNotBe: []string{"(0)", "code 0"},
		},
		{
			name:     "ollama api_error, code null",
			inStream: fakeserver.Reply{ErrorType: "api_error", ErrorMessage: "model runner has unexpectedly stopped"},
			kind:     provider.TransportFailed, retried: true,
			mustSay: []string{"type api_error", "model runner has unexpectedly stopped"}, mustNotBe: []string{"(0)", "code 0"},
		},
		{
			name:     "vllm numeric code 400",
			inStream: fakeserver.Reply{ErrorType: "BadRequestError", ErrorNumericCode: 400, ErrorMessage: "This model's maximum context length is 4096 tokens"},
			kind:     provider.InvalidRequest,
			mustSay:  []string{"code 400", "type BadRequestError"},
		},
		{
			name:     "vllm numeric code 500",
			inStream: fakeserver.Reply{ErrorType: "InternalServerError", ErrorNumericCode: 500, ErrorMessage: "engine dead"},
			kind:     provider.TransportFailed, retried: true,
			mustSay: []string{"code 500"},
		},
		{
			name:     "litellm code as text",
			inStream: fakeserver.Reply{ErrorType: "throttling_error", ErrorCode: "429", ErrorMessage: "Rate limit"},
			kind:     provider.RateLimited, retried: true,
			mustSay: []string{"code 429"},
		},
		{
			name:     "openrouter error inside a chunk",
			inStream: fakeserver.Reply{ErrorInChunk: true, ErrorCode: "server_error", ErrorMessage: "Provider disconnected unexpectedly"},
			kind:     provider.TransportFailed, detail: "server_error", retried: true,
			mustSay: []string{"Provider disconnected unexpectedly"},
		},
		{
			name:     "openrouter credits exhausted",
			inStream: fakeserver.Reply{ErrorInChunk: true, ErrorNumericCode: 402, ErrorMessage: "Insufficient credits"},
			response: &fakeserver.Reply{Fault: fakeserver.FaultStatus, Status: 402, ErrorMessage: "Insufficient credits"},
			kind:     provider.RateLimited,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply := tc.inStream
			reply.Fault = fakeserver.FaultErrorInStream
			s := newSetup(t, nil, reply, reply, reply)
			_, deltas, err := s.call(t, ask("x"))
			pe := wantKind(t, err, tc.kind, tc.detail)
			if pe.StatusCode != 0 || strings.Contains(err.Error(), "HTTP") {
				t.Errorf("%v: reports an HTTP status; the stream's was 200", err)
			}
			for _, want := range tc.mustSay {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: does not say %q", err, want)
				}
			}
			for _, bad := range tc.mustNotBe {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("%v: says %q", err, bad)
				}
			}
			if strings.Join(deltas, "") != "" {
				t.Errorf("deltas %q", deltas)
			}
			wantRequests := 1
			if tc.retried {
				wantRequests = 3
			}
			if n := len(s.server.Requests()); n != wantRequests {
				t.Errorf("%d requests, want %d", n, wantRequests)
			}
			if tc.response == nil {
				return
			}
			r := newSetup(t, nil, *tc.response, *tc.response, *tc.response)
			_, _, rerr := r.call(t, ask("x"))
			rpe := wantKind(t, rerr, tc.kind, tc.detail)
			if rpe.StatusCode != tc.response.Status {
				t.Errorf("the response's status %d is reported as %d", tc.response.Status, rpe.StatusCode)
			}
			if n := len(r.server.Requests()); n != wantRequests {
				t.Errorf("as a response: %d requests, want %d as in the stream", n, wantRequests)
			}
		})
	}
}

// An error after content was delivered is not retried, whatever its kind.
func TestErrorInsideTheStreamAfterContent(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"half", "never"}, Fault: fakeserver.FaultErrorInStream, EventsBeforeFault: 2, ErrorType: "server_error"})
	_, deltas, err := s.call(t, ask("x"))
	wantKind(t, err, provider.TransportFailed, "")
	if diff := cmp.Diff([]string{"half"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if n := len(s.server.Requests()); n != 1 {
		t.Errorf("%d requests: an answer already shown was asked again", n)
	}
}

// A plain answer that is an error object with status 200 is classified as
// the same error in a stream is.
func TestErrorInsideAPlainAnswer(t *testing.T) {
	s := newSetup(t, func(c *Config) { c.Streaming = false }, fakeserver.Reply{Fault: fakeserver.FaultErrorInStream, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota", ErrorMessage: "quota"})
	_, _, err := s.call(t, ask("x"))
	if pe := wantKind(t, err, provider.RateLimited, "insufficient_quota"); pe.StatusCode != 0 {
		t.Errorf("status %d", pe.StatusCode)
	}
	if n := len(s.server.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}

// Error events in forms go-openai does not catch, or cannot read.
func TestOddErrorEvents(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		kind       provider.ErrorKind
		say        string
	}{
		{"vllm error object as the event", `data: {"object":"error","message":"bad things","type":"BadRequestError","param":null,"code":400}` + "\n\n", provider.InvalidRequest, "bad things"},
		// go-openai takes an event that begins with {"error": for its own
		// and drops one it cannot read: what it said is lost, not the error.
		{"error as text", `data: {"error":"overloaded"}` + "\n\n", provider.TransportFailed, "cannot be read"},
		{"error as text after the id", `data: {"id":"x","error":"overloaded"}` + "\n\n", provider.TransportFailed, "overloaded"},
		{"finish_reason error without an error", `data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}` + "\n\ndata: [DONE]\n\n", provider.TransportFailed, `finish_reason "error"`},
		{"error of numbers", `data: {"id":"x","error":[1,2]}` + "\n\n", provider.TransportFailed, "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Stream(context.Background(), ask("x"), nil)
			pe := wantKind(t, err, tc.kind, "")
			if pe.StatusCode != 0 || !strings.Contains(err.Error(), tc.say) {
				t.Errorf("%v: want no status and %q", err, tc.say)
			}
		})
	}
}

func TestClassifyError(t *testing.T) {
	for _, tc := range []struct {
		status     int
		code       any
		typ        string
		kind       provider.ErrorKind
		detail     string
		retryable  bool
		whyInclude string
	}{
		{429, "insufficient_quota", "insufficient_quota", provider.RateLimited, "insufficient_quota", false, "OpenAI's quota, as a response"},
		{0, "insufficient_quota", "insufficient_quota", provider.RateLimited, "insufficient_quota", false, "and in a stream"},
		{0, nil, "insufficient_quota", provider.RateLimited, "insufficient_quota", false, "the type alone says it"},
		{401, "invalid_api_key", "invalid_request_error", provider.AuthenticationFailed, "invalid_api_key", false, ""},
		{0, "invalid_api_key", "invalid_request_error", provider.AuthenticationFailed, "invalid_api_key", false, ""},
		{400, "invalid_api_key", "invalid_request_error", provider.AuthenticationFailed, "invalid_api_key", false, "the code says more than the status"},
		{0, nil, "authentication_error", provider.AuthenticationFailed, "authentication_error", false, ""},
		{404, "model_not_found", "invalid_request_error", provider.ModelUnavailable, "model_not_found", false, ""},
		{400, "model_not_found", "invalid_request_error", provider.ModelUnavailable, "model_not_found", false, ""},
		{0, nil, "not_found_error", provider.ModelUnavailable, "", false, "Ollama's 404 type"},
		{429, "rate_limit_exceeded", "requests", provider.RateLimited, "rate_limit_exceeded", true, ""},
		{0, nil, "tokens", provider.RateLimited, "tokens", true, ""},
		{500, nil, "server_error", provider.TransportFailed, "", true, ""},
		{0, 0, "server_error", provider.TransportFailed, "", true, "go-openai decodes a null code as 0"},
		{0, 500, "InternalServerError", provider.TransportFailed, "", true, "vLLM"},
		{0, 400, "BadRequestError", provider.InvalidRequest, "", false, "vLLM"},
		{0, "429", "", provider.RateLimited, "", true, "LiteLLM"},
		{0, 402.0, "", provider.RateLimited, "", false, "OpenRouter's credits"},
		{402, nil, "", provider.RateLimited, "", false, ""},
		{403, nil, "", provider.AuthenticationFailed, "", false, ""},
		{400, "context_length_exceeded", "invalid_request_error", provider.InvalidRequest, "context_length_exceeded", false, ""},
		{0, "context_length_exceeded", "invalid_request_error", provider.InvalidRequest, "context_length_exceeded", false, ""},
		{0, nil, "", provider.TransportFailed, "", true, "nothing said: a server failing mid-answer"},
		{0, 7, "api_error", provider.TransportFailed, "", true, "a number that is no status"},
		{302, nil, "", provider.InvalidRequest, "", false, ""},
	} {
		kind, detail, retryable := classifyError(tc.status, errorCodeOf(tc.code), tc.typ)
		if kind != tc.kind || detail != tc.detail || retryable != tc.retryable {
			t.Errorf("status %d code %v type %q: %s %q retryable %v; want %s %q %v (%s)", tc.status, tc.code, tc.typ, kind, detail, retryable, tc.kind, tc.detail, tc.retryable, tc.whyInclude)
		}
	}
}

// TestDoneWithoutFinishReason: a stream that ends with [DONE] but never
// says why (some servers) is a complete answer, marked as such; one cut
// without [DONE] is still refused.
func TestDoneWithoutFinishReason(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Chunks: []string{"the ", "answer"}, NoFinishReason: true})
	resp, _, err := s.call(t, ask("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "the answer" || resp.FinishReason != "" || !resp.FinishReasonMissing || !resp.UsageKnown {
		t.Errorf("response %+v", resp)
	}

	p := newSetup(t, func(c *Config) { c.Streaming = false }, fakeserver.Reply{Content: "whole", NoFinishReason: true})
	resp, _, err = p.call(t, ask("x"))
	if err != nil || resp.Content != "whole" || !resp.FinishReasonMissing {
		t.Errorf("plain: %+v, %v", resp, err)
	}

	f := newSetup(t, nil, fakeserver.Text("said"))
	resp, _, err = f.call(t, ask("x"))
	if err != nil || resp.FinishReasonMissing {
		t.Errorf("a stream with its finish reason: %+v, %v", resp, err)
	}

	for _, body := range []string{
		// [DONE] as the last line, without its newline.
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata:[DONE]  \r\n\r\n",
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(body))
		}))
		m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := m.Stream(context.Background(), ask("x"), nil)
		if err != nil || resp.Content != "x" || !resp.FinishReasonMissing {
			t.Errorf("%q: %+v, %v", body, resp, err)
		}
		ts.Close()
	}

	for _, body := range []string{
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]x\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DON\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n: data: [DONE]\n\n",
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(body))
		}))
		m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true, Retry: plan.TransportRetry{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Stream(context.Background(), ask("x"), nil)
		if provider.KindOf(err) == "" {
			t.Errorf("%q: %v; a stream without [DONE] or a finish reason is refused", body, err)
		}
		ts.Close()
	}
}

// TestReasoningUnderEveryName streams reasoning under each name real
// servers use: it arrives as ReasoningDelta events, before and apart from
// the answer, and whole in Response.Reasoning; a name sent twice with the
// same text (OpenRouter, vLLM while it renamed the field) counts once.
func TestReasoningUnderEveryName(t *testing.T) {
	for _, tc := range []struct {
		name string
		as   fakeserver.ReasoningField
	}{
		{"reasoning_content", fakeserver.ReasoningContent},
		{"reasoning", fakeserver.ReasoningText},
		{"reasoning and reasoning_details", fakeserver.ReasoningDetails},
		{"reasoning_details summary", fakeserver.ReasoningSummary},
	} {
		for _, streaming := range []bool{true, false} {
			t.Run(tc.name, func(t *testing.T) {
				s := newSetup(t, func(c *Config) { c.Streaming = streaming },
					fakeserver.Reply{ReasoningChunks: []string{"6 times 7 ", "is 42"}, ReasoningAs: tc.as, Chunks: []string{"42"}})
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
				want := []provider.Event{{ReasoningDelta: "6 times 7 "}, {ReasoningDelta: "is 42"}, {ContentDelta: "42"}}
				if !streaming {
					want = []provider.Event{{ReasoningDelta: "6 times 7 is 42"}, {ContentDelta: "42"}}
				}
				if diff := cmp.Diff(want, events); diff != "" {
					t.Errorf("streaming=%v events (-want +got):\n%s", streaming, diff)
				}
				if resp.Content != "42" || resp.Reasoning != "6 times 7 is 42" {
					t.Errorf("streaming=%v: content %q, reasoning %q", streaming, resp.Content, resp.Reasoning)
				}
			})
		}
	}
}

// Reasoning in a shape no server documents is dropped; the answer stands.
func TestReasoningInAnOddShapeKeepsTheAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"reasoning":{"effort":"high"},"reasoning_details":{"x":1}}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"abc"},{"type":"reasoning.text","text":5},{"type":"reasoning.text","text":"ok"}],"content":"a"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"))
	}))
	defer ts.Close()
	m, err := New(Config{BaseURL: ts.URL, Model: "m", Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Stream(context.Background(), ask("x"), nil)
	if err != nil || resp.Content != "a" || resp.Reasoning != "ok" {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// FuzzChunk reads arbitrary bytes as a stream's event: decoding never
// panics, and what a chunk delivers is counted against the response's
// bound. Reasoning written under any of its names reads back exactly.
func FuzzChunk(f *testing.F) {
	for _, seed := range []string{
		`{"choices":[{"index":0,"delta":{"content":"hi","reasoning_content":"r"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning":"r","reasoning_details":[{"type":"reasoning.text","text":"r"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.summary","summary":"s"},{"type":"reasoning.encrypted","data":"x"}]}}]}`,
		`{"id":"x","error":{"code":502,"message":"down"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
		`{"object":"error","message":"m","type":"BadRequestError","code":400}`,
		`{"error":"text"}`, `{"error":null}`, `{"choices":null}`, `[]`, `"x"`, `{"choices":[{"delta":{"reasoning":7}}]}`,
	} {
		f.Add([]byte(seed), "thought", uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, text string, which uint8) {
		if c, err := decodeChunk(data); err == nil {
			c.errorOf(data)
			var b turnBuilder
			e := b.add(c)
			if n := int64(len(e.ContentDelta) + len(e.ReasoningDelta)); b.size < n {
				t.Fatalf("%q: delivered %d bytes, counted %d", data, n, b.size)
			}
		}

		// Round trip: text under one of the names reads back as it is.
		if !utf8.ValidString(text) || text == "" {
			return
		}
		var delta map[string]any
		switch which % 4 {
		case 0:
			delta = map[string]any{"reasoning_content": text}
		case 1:
			delta = map[string]any{"reasoning": text, "reasoning_details": []any{map[string]any{"type": "reasoning.text", "text": text}}}
		case 2:
			delta = map[string]any{"reasoning_details": []any{map[string]any{"type": "reasoning.text", "text": text}}}
		case 3:
			delta = map[string]any{"reasoning_details": []any{map[string]any{"type": "reasoning.encrypted", "data": "x"}, map[string]any{"type": "reasoning.summary", "summary": text}}}
		}
		line, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta}}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := decodeChunk(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var b turnBuilder
		if e := b.add(c); e.ReasoningDelta != text {
			t.Fatalf("%s: reasoning %q, want %q", line, e.ReasoningDelta, text)
		}
	})
}
