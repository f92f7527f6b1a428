package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// goOpenAIBody is what go-openai sends for chat: json.Marshal of the
// request (internal.JSONMarshaller), with Stream set as
// CreateChatCompletionStream sets it.
func goOpenAIBody(t testing.TB, chat goopenai.ChatCompletionRequest) []byte {
	t.Helper()
	b, err := json.Marshal(chat)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileText is text a model or a tool could send: HTML that
// json.Marshal escapes, quotes, control characters, invalid UTF-8, the
// separators JavaScript cannot hold, and what the body's own framing looks
// like.
var hostileText = []string{
	"",
	"plain",
	`<script>alert("x")</script> & more`,
	"line\nbreak\ttab\x00nul\x1b[2J",
	"\xff\xfe invalid \xc3",
	"\u2028\u2029",
	`,"messages":null`,
	`{"model":"m","messages":null}`,
	"ünïcödé 😀",
}

// Every body the server receives is byte for byte go-openai's encoding of
// the whole request, streamed or not, turn after turn of a growing
// conversation (the messages come from the cache from the second turn on).
func TestWireBodyIsGoOpenAIs(t *testing.T) {
	temp := 0.0
	for _, streaming := range []bool{true, false} {
		replies := make([]fakeserver.Reply, 0, 16)
		for range 16 {
			replies = append(replies, fakeserver.Text("ok"))
		}
		s := newSetup(t, func(c *Config) { c.Streaming = streaming; c.Model = `m<&>"` }, replies...)
		var msgs []provider.Message
		msgs = append(msgs, provider.Message{Role: provider.System, Content: hostileText[2]})
		for i, text := range hostileText {
			id := "call_" + strings.Repeat("x", i)
			msgs = append(msgs,
				provider.Message{Role: provider.User, Content: text},
				provider.Message{Role: provider.Assistant, Content: text, ToolCalls: []provider.ToolCall{{ID: id, Name: "calc", Arguments: `{"q":` + string(mustJSON(t, text)) + `}`}}},
				provider.Message{Role: provider.ToolRole, ToolCallID: id, Content: text})
			req := provider.Request{Messages: msgs, Tools: requestTools, ToolChoice: "calc", MaxOutputTokens: 64}
			if i%2 == 1 {
				req.Temperature = &temp
				req.JSON = true
			}
			if _, _, err := s.call(t, req); err != nil {
				t.Fatal(err)
			}
			chat, _, err := requestModel(t).chatRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			chat.Model = s.model.cfg.Model
			chat.Stream = streaming
			if streaming {
				chat.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
			}
			got := s.server.Requests()[i].Body
			if want := goOpenAIBody(t, chat); !bytes.Equal(got, want) {
				t.Fatalf("streaming %v, turn %d: the body sent is not go-openai's\n got: %s\nwant: %s", streaming, i, got, want)
			}
		}
	}
}

// A request without messages is go-openai's own, "messages":null.
func TestWireBodyWithoutMessages(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Text("ok"))
	if _, _, err := s.call(t, provider.Request{}); err != nil {
		t.Fatal(err)
	}
	if got := s.server.Requests()[0].Body; !bytes.Contains(got, []byte(`"messages":null`)) {
		t.Errorf("body %s", got)
	}
}

// A message is encoded once per conversation: the next turn's body reuses
// the bytes of every message the previous turn encoded.
func TestWireMessagesEncodedOnce(t *testing.T) {
	m := requestModel(t)
	var prev [][]byte
	for n := range 6 {
		req := provider.Request{Messages: growingConversation(n, "a"), Tools: requestTools}
		chat, encoded, err := m.chatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if len(encoded) != len(chat.Messages) {
			t.Fatalf("turn %d: %d messages, %d encoded", n, len(chat.Messages), len(encoded))
		}
		for i := range chat.Messages {
			if want := mustJSON(t, chat.Messages[i]); !bytes.Equal(encoded[i], want) {
				t.Fatalf("turn %d message %d encoded as %s, want %s", n, i, encoded[i], want)
			}
			if i < len(prev) && &encoded[i][0] != &prev[i][0] {
				t.Errorf("turn %d: message %d was encoded again", n, i)
			}
		}
		prev = encoded
	}
}

// A body that is not the shape the messages go into is never sent: the
// call fails as an invalid request, without a retry.
func TestWireBodyOfAnotherShapeIsNotSent(t *testing.T) {
	w := &wireMessages{model: "m", messages: [][]byte{[]byte(`{"role":"user"}`)}}
	for _, body := range []string{``, `{}`, `{"model":"n","messages":null}`, `{"model":"m","messages":[]}`, `{"model":"m"}`, `{"messages":null,"model":"m"}`} {
		if got, _, err := w.splice([]byte(body)); !errors.Is(err, errWireBody) {
			t.Errorf("splice(%s) = %v, %v; want errWireBody", body, got, err)
		}
	}
	for _, tc := range []struct {
		messages [][]byte
		want     string
	}{
		{nil, `{"model":"m","messages":[],"stream":true}`},
		{[][]byte{[]byte(`{"role":"user"}`)}, `{"model":"m","messages":[{"role":"user"}],"stream":true}`},
		{[][]byte{[]byte(`1`), []byte(`2`), []byte(`3`)}, `{"model":"m","messages":[1,2,3],"stream":true}`},
	} {
		w := &wireMessages{model: "m", messages: tc.messages}
		r, size, err := w.splice([]byte(`{"model":"m","messages":null,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		// One byte at a time, then whatever is left: a reader's every
		// piece boundary.
		var got []byte
		buf := make([]byte, 1)
		for len(got) < 5 {
			n, err := r.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
		}
		rest, _ := io.ReadAll(r)
		got = append(got, rest...)
		if string(got) != tc.want || size != int64(len(tc.want)) {
			t.Errorf("splice = %s (%d bytes said), want %s", got, size, tc.want)
		}
	}

	s := newSetup(t, nil, fakeserver.Text("ok"))
	ctx := context.WithValue(context.Background(), exchangeKey{}, &exchange{wire: w})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.server.URL()+"/chat/completions", strings.NewReader(`{"model":"other","messages":null}`))
	if _, err := httpClient(nil, 0).Do(req); err == nil {
		t.Fatal("a body of another shape was sent")
	}
	if len(s.server.Requests()) != 0 {
		t.Error("a body of another shape reached the server")
	}
	f := s.model.classify(context.Background(), context.Background(), errWireBody, &exchange{})
	wantKind(t, f.err, provider.InvalidRequest, "")
	if f.retryable {
		t.Error("a body of another shape is retried")
	}
}

// A redirect to GET (303) carries no body, and is followed as it was.
func TestWireBodyNoBody(t *testing.T) {
	w := &wireMessages{model: "m"}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/", nil)
	if got, err := w.withMessages(req); err != nil || got != req {
		t.Errorf("withMessages(GET) = %v, %v", got, err)
	}
}

// The spliced body is go-openai's encoding of the whole request, whatever
// the text (FuzzWireBody's oracle is json.Marshal itself).
func FuzzWireBody(f *testing.F) {
	for i, s := range hostileText {
		f.Add(s, hostileText[(i+1)%len(hostileText)], "m", uint8(i))
	}
	f.Fuzz(func(t *testing.T, a, b, model string, n uint8) {
		msgs := []goopenai.ChatCompletionMessage{{Role: "system", Content: a}}
		for i := range int(n % 8) {
			msgs = append(msgs,
				goopenai.ChatCompletionMessage{Role: "assistant", Content: b, ToolCalls: []goopenai.ToolCall{{ID: a, Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: b, Arguments: a}}}},
				goopenai.ChatCompletionMessage{Role: "tool", ToolCallID: a, Content: strings.Repeat(b, i)})
		}
		chat := goopenai.ChatCompletionRequest{Model: model, Messages: msgs, Stream: n%2 == 0, MaxTokens: int(n)}
		if n%3 == 0 {
			chat.Tools = []goopenai.Tool{{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: b, Parameters: json.RawMessage(`{"type":"object"}`)}}}
			chat.ToolChoice = "auto"
		}
		encoded := make([][]byte, len(msgs))
		for i := range msgs {
			encoded[i] = mustJSON(t, msgs[i])
		}
		stub, w := withoutMessages(chat, encoded)
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", bytes.NewReader(goOpenAIBody(t, stub)))
		if err != nil {
			t.Fatal(err)
		}
		full, err := w.withMessages(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(full.Body)
		if want := goOpenAIBody(t, chat); !bytes.Equal(got, want) {
			t.Fatalf("spliced body differs\n got: %s\nwant: %s", got, want)
		}
		if full.ContentLength != int64(len(got)) {
			t.Errorf("ContentLength %d, body %d bytes", full.ContentLength, len(got))
		}
		again, _ := full.GetBody()
		if b, _ := io.ReadAll(again); !bytes.Equal(b, got) {
			t.Error("GetBody gives another body")
		}
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A retried request sends the same whole body again.
func TestWireBodyOnRetry(t *testing.T) {
	s := newSetup(t, nil, fakeserver.Reply{Fault: fakeserver.FaultRateLimit, RetryAfterHeader: "0"}, fakeserver.Text("ok"))
	if _, _, err := s.call(t, ask("again")); err != nil {
		t.Fatal(err)
	}
	reqs := s.server.Requests()
	if len(reqs) != 2 || !bytes.Equal(reqs[0].Body, reqs[1].Body) || len(reqs[1].Chat.Messages) != 2 {
		t.Fatalf("%d requests; bodies:\n%s\n%s", len(reqs), reqs[0].Body, reqs[len(reqs)-1].Body)
	}
}
