package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	goopenai "github.com/sashabaranov/go-openai"
)

// A request's messages are most of its body, and in a loop every call sends
// all of them again. Encoding them is go-openai's json.Marshal of the whole
// request, each message through its MarshalJSON and then compacted: the
// largest client-side cost of a long run, growing with the square of its
// length. So go-openai is handed the request without its messages (it still
// validates the request, builds the URL and headers and reads the response,
// as before) and the transport puts them back: it replaces the body's
// "messages":null with the array of messages chatRequest encoded, each once
// per conversation (wireCache). The body sent is byte for byte what
// go-openai's encoding of the whole request would have been
// (TestWireBodyIsGoOpenAIs, FuzzWireBody).

// errWireBody is a body the transport could not complete: go-openai encoded
// the request in a shape wireBody does not know. It is never sent.
var errWireBody = errors.New("the request body is not the shape the messages are spliced into")

// wireMessages is what attempt gives the transport with go-openai's
// request: the model's name (the body's first field) and the encoded
// messages.
type wireMessages struct {
	model    string
	messages [][]byte
}

// withoutMessages is chat as go-openai is given it: with no messages, which
// the transport puts back (nil when chat has none: the body then stays
// go-openai's, "messages":null).
func withoutMessages(chat goopenai.ChatCompletionRequest, encoded [][]byte) (goopenai.ChatCompletionRequest, *wireMessages) {
	if chat.Messages == nil {
		return chat, nil
	}
	w := &wireMessages{model: chat.Model, messages: encoded}
	chat.Messages = nil
	return chat, w
}

// splice returns body, go-openai's encoding of a request without messages,
// with its "messages":null replaced by the messages' array.
func (w *wireMessages) splice(body []byte) ([]byte, error) {
	// The body begins {"model":"…","messages":null: model is the struct's
	// first field and messages its second, neither omitempty.
	model, err := json.Marshal(w.model)
	if err != nil {
		return nil, err
	}
	const field, null = `{"model":`, `,"messages":null`
	n := len(field) + len(model) + len(null)
	if len(body) < n || string(body[:len(field)]) != field || !bytes.Equal(body[len(field):len(field)+len(model)], model) ||
		string(body[len(field)+len(model):n]) != null {
		return nil, errWireBody
	}
	size := len(body) - len("null") + len("[]") + max(len(w.messages)-1, 0)
	for _, m := range w.messages {
		size += len(m)
	}
	out := make([]byte, 0, size)
	out = append(out, body[:n-len("null")]...)
	out = append(out, '[')
	for i, m := range w.messages {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	out = append(out, ']')
	return append(out, body[n:]...), nil
}

// withMessages is req, which go-openai built from a request without
// messages, with w's messages spliced into its body. req is not changed
// (a RoundTripper must not); its body is read and closed. A request
// without a body (the GET a 303 redirect asks for) is sent as it is.
func (w *wireMessages) withMessages(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	full, err := w.splice(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %.40q", err, body)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(full))
	out.ContentLength = int64(len(full))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(full)), nil }
	return out, nil
}
