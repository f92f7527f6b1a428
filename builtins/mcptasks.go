package builtins

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP tasks. A server may mark a tool `execution.taskSupport: "required"`:
// it answers a plain tools/call with an error ("requires task
// augmentation") and works only when the client runs the call as a task
// (tools/call with a task, then tasks/get and tasks/result). The official
// Go SDK that symbi speaks MCP through (go-sdk v1.8.0) has no client side
// for tasks, and its mcp.Tool does not even keep the field. So the
// toolbox reads each server's tools/list answers itself, as they arrive,
// and does not offer such a tool: a model would only ever see it fail.
// Toolbox.Withheld lists them, with why, for `symbi tools`, the REPL and
// the journal's started line. Tools whose task support is "optional" or
// "forbidden" are called as usual.

// taskRequired is the reason a tool that requires task augmentation is
// withheld.
const taskRequired = `requires MCP task augmentation (execution.taskSupport "required"), which symbi's MCP client (the official Go SDK) cannot do yet, so every call would fail`

// Withheld is a tool of an MCP server that the toolbox does not offer,
// and why.
type Withheld struct {
	Name   string `json:"name"`   // the server's name for the tool
	Source string `json:"source"` // the mcp_server address, or the tool block (tool.x) that wraps it
	Reason string `json:"reason"`
}

// toolExecution keeps what the tools/list answers said of each tool's
// execution, by tool name: for now its taskSupport.
type toolExecution struct {
	mu          sync.Mutex
	taskSupport map[string]string
}

// record reads one tools/list result. A result that does not parse says
// nothing (the SDK reports it).
func (x *toolExecution) record(result []byte) {
	var r struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.taskSupport == nil {
		x.taskSupport = map[string]string{}
	}
	for _, t := range r.Tools {
		if t.Execution != nil {
			x.taskSupport[t.Name] = t.Execution.TaskSupport
		}
	}
}

// requiresTask reports whether the server said the tool needs task
// augmentation.
func (x *toolExecution) requiresTask(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.taskSupport[name] == "required"
}

const methodListTools = "tools/list"

// listReadingTransport wraps a stdio server's transport: its connection
// hands every tools/list answer to x before the SDK reads it.
type listReadingTransport struct {
	inner mcp.Transport
	x     *toolExecution
}

func (t *listReadingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &listReadingConn{Connection: c, x: t.x, pending: map[jsonrpc.ID]bool{}}, nil
}

// listReadingConn notes the ids of tools/list requests as they go out and
// reads the answers to them as they come in. (A stdio connection only:
// the streamable HTTP one must be the SDK's own, which learns the session's
// protocol version through a method no wrapper can have; its answers are
// read by listReadingRoundTripper.)
type listReadingConn struct {
	mcp.Connection
	x       *toolExecution
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
}

func (c *listReadingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodListTools && req.ID.IsValid() {
		c.mu.Lock()
		c.pending[req.ID] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *listReadingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		mine := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if mine && resp.Error == nil {
			c.x.record(resp.Result)
		}
	}
	return msg, err
}

// listReadingRoundTripper passes a streamable HTTP server's exchanges
// through, and hands the answer to a tools/list request (one JSON body, or
// an event of an SSE stream) to x as the SDK reads it.
type listReadingRoundTripper struct {
	base http.RoundTripper
	x    *toolExecution
}

// maxListBody bounds what is kept of a tools/list answer while it is read:
// beyond it the answer is passed on but not read for task support.
const maxListBody = 16 << 20

func (rt *listReadingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	id, ok := listRequestID(req)
	resp, err := rt.base.RoundTrip(req)
	if err != nil || !ok || resp.Body == nil {
		return resp, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resp.Body = &listReadingBody{ReadCloser: resp.Body, x: rt.x, id: id, sse: ct == "text/event-stream"}
	return resp, nil
}

// listRequestID is the id of a POSTed tools/list request, read from a copy
// of its body.
func listRequestID(req *http.Request) (string, bool) {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return "", false
	}
	body, err := req.GetBody()
	if err != nil {
		return "", false
	}
	defer body.Close()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&msg) != nil || msg.Method != methodListTools || len(msg.ID) == 0 {
		return "", false
	}
	return string(msg.ID), true
}

// listReadingBody reads the answer as it passes: a JSON body whole, at
// its end; an SSE stream event by event, each when its blank line
// arrives, so the answer is recorded before the SDK acts on it.
type listReadingBody struct {
	io.ReadCloser
	x    *toolExecution
	id   string
	sse  bool
	buf  bytes.Buffer
	over bool
}

func (b *listReadingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.over {
		b.buf.Write(p[:n])
		if b.buf.Len() > maxListBody {
			b.over = true
			b.buf = bytes.Buffer{}
		}
	}
	switch {
	case b.over:
	case b.sse:
		b.events()
	case err == io.EOF:
		b.answer(b.buf.Bytes())
		b.buf.Reset()
	}
	return n, err
}

// events takes every complete SSE event out of the buffer and reads its
// data.
func (b *listReadingBody) events() {
	for {
		data := b.buf.Bytes()
		end, sep := bytes.Index(data, []byte("\n\n")), 2
		if i := bytes.Index(data, []byte("\r\n\r\n")); i >= 0 && (end < 0 || i < end) {
			end, sep = i, 4
		}
		if end < 0 {
			return
		}
		var payload bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(data[:end]))
		sc.Buffer(nil, maxListBody+1)
		for sc.Scan() {
			if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				payload.Write(bytes.TrimPrefix(v, []byte(" ")))
				payload.WriteByte('\n')
			}
		}
		b.answer(payload.Bytes())
		b.buf.Next(end + sep)
	}
}

// answer reads one JSON-RPC message: the response to the tools/list
// request this body answers.
func (b *listReadingBody) answer(msg []byte) {
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &resp) != nil || string(resp.ID) != b.id || len(resp.Result) == 0 {
		return
	}
	b.x.record(resp.Result)
}

// withheldTool says why a server tool is not offered, or "" when it is.
func (s *mcpSession) withheldTool(name string) string {
	if s.exec.requiresTask(name) {
		return taskRequired
	}
	return ""
}

// withheldErr is newEntry's answer for a tool block that wraps a server
// tool the toolbox does not offer.
type withheldErr struct{ tool, reason string }

func (e *withheldErr) Error() string { return fmt.Sprintf("tool %q %s", e.tool, e.reason) }
