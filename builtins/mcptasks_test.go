package builtins

import (
	"bytes"
	"io"
	"testing"
)

// readThrough reads body through a listReadingBody in pieces of the
// given sizes (cycled) and returns what came out and what was recorded.
func readThrough(body []byte, sse bool, sizes []int) ([]byte, *toolExecution) {
	x := &toolExecution{}
	b := &listReadingBody{ReadCloser: io.NopCloser(bytes.NewReader(body)), x: x, id: "7", sse: sse}
	var out bytes.Buffer
	for i := 0; ; i++ {
		n := 1
		if len(sizes) > 0 {
			n = max(sizes[i%len(sizes)], 1)
		}
		p := make([]byte, n)
		k, err := b.Read(p)
		out.Write(p[:k])
		if err != nil {
			break
		}
	}
	return out.Bytes(), x
}

// The answer to the tools/list request is found in an SSE stream however
// its bytes are split, with CRLF or LF line ends, after other messages,
// and only the answer with the request's id counts; a JSON body is read
// at its end.
func TestListReadingBody(t *testing.T) {
	answer := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"slow","execution":{"taskSupport":"required"}},{"name":"quick","execution":{"taskSupport":"optional"}}]}}`
	other := `{"jsonrpc":"2.0","id":8,"result":{"tools":[{"name":"quick","execution":{"taskSupport":"required"}}]}}`
	for name, tc := range map[string]struct {
		body []byte
		sse  bool
	}{
		"sse":      {[]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\nevent: message\ndata: " + other + "\n\nevent: message\ndata: " + answer + "\n\n"), true},
		"sse_crlf": {[]byte("event: message\r\ndata: " + answer + "\r\n\r\n"), true},
		"json":     {[]byte(answer), false},
	} {
		for _, sizes := range [][]int{{1}, {7, 3}, {1 << 16}} {
			out, x := readThrough(tc.body, tc.sse, sizes)
			if !bytes.Equal(out, tc.body) {
				t.Fatalf("%s: the body changed on its way through", name)
			}
			if !x.requiresTask("slow") || x.requiresTask("quick") {
				t.Errorf("%s in pieces of %v: slow %v, quick %v; want slow alone to require tasks", name, sizes, x.requiresTask("slow"), x.requiresTask("quick"))
			}
		}
	}
}

// FuzzListReadingBody: whatever a server sends, the body reaches the SDK
// byte for byte, however it is split, and reading it never panics.
func FuzzListReadingBody(f *testing.F) {
	f.Add([]byte("data: {\"id\":7,\"result\":{\"tools\":[{\"name\":\"a\",\"execution\":{\"taskSupport\":\"required\"}}]}}\n\n"), true, uint8(3))
	f.Add([]byte(`{"id":7,"result":{"tools":[]}}`), false, uint8(1))
	f.Add([]byte("\r\n\r\ndata:\n\n\n"), true, uint8(2))
	f.Fuzz(func(t *testing.T, body []byte, sse bool, size uint8) {
		out, _ := readThrough(body, sse, []int{int(size)})
		if !bytes.Equal(out, body) {
			t.Fatalf("the body changed on its way through: %q -> %q", body, out)
		}
	})
}
