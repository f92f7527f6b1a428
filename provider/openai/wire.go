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
// with its "messages":null replaced by the messages' array: as a reader
// over the pieces (the messages are not copied into one buffer), and its
// length.
func (w *wireMessages) splice(body []byte) (*splicedBody, int64, error) {
	// The body begins {"model":"…","messages":null: model is the struct's
	// first field and messages its second, neither omitempty.
	model, err := json.Marshal(w.model)
	if err != nil {
		return nil, 0, err
	}
	const field, null = `{"model":`, `,"messages":null`
	n := len(field) + len(model) + len(null)
	if len(body) < n || string(body[:len(field)]) != field || !bytes.Equal(body[len(field):len(field)+len(model)], model) ||
		string(body[len(field)+len(model):n]) != null {
		return nil, 0, errWireBody
	}
	size := int64(len(body) - len("null") + len("[]") + max(len(w.messages)-1, 0))
	for _, m := range w.messages {
		size += int64(len(m))
	}
	return newSplicedBody(body[:n-len("null")], body[n:], w.messages), size, nil
}

// splicedBody reads head, then the messages as a JSON array, then tail.
type splicedBody struct {
	head, tail []byte
	messages   [][]byte
	next       int     // the piece after cur: 0 head … see piece
	cur        []byte  // what is left of the piece being read
	punct      [3]byte // "[,]", the array's punctuation
}

func newSplicedBody(head, tail []byte, messages [][]byte) *splicedBody {
	return &splicedBody{head: head, tail: tail, messages: messages, punct: [3]byte{'[', ',', ']'}}
}

// piece is the i'th piece of the body, and false past the last: head, "[",
// the messages with "," between them, "]", tail.
func (b *splicedBody) piece(i int) ([]byte, bool) {
	n := len(b.messages)
	switch {
	case i == 0:
		return b.head, true
	case i == 1:
		return b.punct[0:1], true
	case i < 2*n+1: // 2 … 2n: message, comma, message, …
		if i%2 == 0 {
			return b.messages[(i-2)/2], true
		}
		return b.punct[1:2], true
	case i == max(2*n+1, 2):
		return b.punct[2:3], true
	case i == max(2*n+2, 3):
		return b.tail, true
	}
	return nil, false
}

func (b *splicedBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(b.cur) == 0 {
			next, ok := b.piece(b.next)
			if !ok {
				break
			}
			b.next++
			b.cur = next
			continue
		}
		c := copy(p[n:], b.cur)
		b.cur = b.cur[c:]
		n += c
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// withMessages is req, which go-openai built from a request without
// messages, with w's messages spliced into its body. req is not changed
// (a RoundTripper must not); its body is read and closed. A request
// without a body (the GET a 303 redirect asks for) is sent as it is.
func (w *wireMessages) withMessages(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	var body []byte
	var err error
	if req.ContentLength > 0 {
		body = make([]byte, req.ContentLength)
		_, err = io.ReadFull(req.Body, body)
	} else {
		body, err = io.ReadAll(req.Body)
	}
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	full, size, err := w.splice(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %.40q", err, body)
	}
	// A shallow copy, as Request.WithContext makes: the headers are only
	// read from here on.
	out := new(http.Request)
	*out = *req
	out.Body = io.NopCloser(full)
	out.ContentLength = size
	out.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(newSplicedBody(full.head, full.tail, full.messages)), nil
	}
	return out, nil
}
