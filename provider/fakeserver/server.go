package fakeserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Request is one request the server received.
type Request struct {
	Path       string
	RemoteAddr string // the client's address: one per connection, so tests can see reuse
	Header     http.Header
	Body       []byte                       // the raw request body
	Chat       openai.ChatCompletionRequest // Body decoded; zero when it was not valid JSON
	// Anthropic is Body decoded as a Messages API request (POST
	// /v1/messages); zero for a Chat Completions request.
	Anthropic MessagesRequest
}

// Server is a fake Chat Completions and Messages API endpoint. It closes itself when the test
// that made it ends.
type Server struct {
	ts      *httptest.Server
	latency time.Duration
	handler func(n int, req Request) Reply
	closing chan struct{}

	mu        sync.Mutex
	queue     []Reply
	requests  []Request
	count     int  // requests received
	noHistory bool // keep no requests (WithoutHistory)
}

// Option configures a Server.
type Option func(*Server)

// WithReplies queues replies, answered in order, one per request. When the
// queue is empty the handler (WithHandler) answers; without one the server
// answers 500 with a message saying nothing was scripted.
func WithReplies(replies ...Reply) Option {
	return func(s *Server) { s.queue = append(s.queue, replies...) }
}

// WithHandler answers every request that the queue does not: n counts the
// requests the server has received, from 0. It is called concurrently for
// concurrent requests.
func WithHandler(h func(n int, req Request) Reply) Option {
	return func(s *Server) { s.handler = h }
}

// WithLatency delays every reply that sets no Latency of its own. Requests
// wait concurrently, so N parallel requests take one latency, not N.
func WithLatency(d time.Duration) Option {
	return func(s *Server) { s.latency = d }
}

// WithoutHistory keeps no record of the requests (Requests returns none),
// so a long benchmark's heap holds only what the code it measures holds.
func WithoutHistory() Option {
	return func(s *Server) { s.noHistory = true }
}

// New starts a server on a loopback port; tb.Cleanup closes it, ending any
// stalled response first.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{closing: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serve)
	mux.HandleFunc("POST /chat/completions", s.serve)
	mux.HandleFunc("POST /v1/messages", s.serveMessages)
	s.ts = httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return s
}

// URL is the base URL to configure a Chat Completions client with; it ends
// in /v1.
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// AnthropicURL is the base URL to configure an Anthropic client with: the
// server's root, under which it serves /v1/messages.
func (s *Server) AnthropicURL() string { return s.ts.URL }

// Enqueue adds replies to the end of the queue.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Close ends stalled responses and shuts the server down. It is safe to call
// more than once.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.ts.CloseClientConnections()
	s.ts.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := Request{Path: r.URL.Path, RemoteAddr: r.RemoteAddr, Header: r.Header.Clone(), Body: body}
	decodeErr := json.Unmarshal(body, &req.Chat)
	reply, ok := s.take(req, decodeErr == nil)
	switch {
	case decodeErr != nil:
		reply = ErrorReply(http.StatusBadRequest, "invalid_request_error", "fakeserver: request body is not a chat completion request: "+decodeErr.Error())
	case !ok:
		reply = ErrorReply(http.StatusInternalServerError, "server_error", reply.ErrorMessage)
	}
	if !s.wait(r, s.latencyOf(reply)) {
		return
	}
	stream := req.Chat.Stream
	includeUsage := req.Chat.StreamOptions != nil && req.Chat.StreamOptions.IncludeUsage
	s.respond(w, r, reply, req.Chat, stream, includeUsage)
}

// take records a request and returns its reply: the next queued one, or
// the handler's. A request that is not valid answers 400 and leaves the
// queue alone, so later requests still get the replies meant for them;
// the caller writes that answer. ok is false when nothing was scripted;
// the reply's ErrorMessage then says so.
func (s *Server) take(req Request, valid bool) (reply Reply, ok bool) {
	s.mu.Lock()
	n := s.count
	s.count++
	if !s.noHistory {
		s.requests = append(s.requests, req)
	}
	queued := valid && len(s.queue) > 0
	if queued {
		reply, s.queue = s.queue[0], s.queue[1:]
	}
	s.mu.Unlock()
	switch {
	case !valid, queued:
		return reply, true
	case s.handler != nil:
		return s.handler(n, req), true
	}
	return Reply{ErrorMessage: fmt.Sprintf("fakeserver: no reply scripted for request %d", n)}, false
}

func (s *Server) latencyOf(reply Reply) time.Duration {
	if reply.Latency != 0 {
		return reply.Latency
	}
	return s.latency
}

// wait sleeps for d unless the client goes away or the server closes; it
// reports whether to go on.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.closing:
		abort()
	}
	return false
}

// stall holds the response until the client gives up or the server closes,
// or for d when d > 0; it reports whether to go on.
func (s *Server) stall(r *http.Request, d time.Duration) bool {
	if d > 0 {
		return s.wait(r, d)
	}
	select {
	case <-r.Context().Done():
	case <-s.closing:
		abort()
	}
	return false
}

// abort drops the connection without ending the response properly, so a
// client reading a stalled response sees it fail rather than end cleanly.
func abort() { panic(http.ErrAbortHandler) }

func (s *Server) respond(w http.ResponseWriter, r *http.Request, reply Reply, chat openai.ChatCompletionRequest, stream, includeUsage bool) {
	switch reply.Fault {
	case FaultRateLimit:
		if reply.RetryAfterHeader != "" {
			w.Header().Set("Retry-After", reply.RetryAfterHeader)
		} else if reply.RetryAfter > 0 {
			secs := (reply.RetryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
		}
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", orDefault(reply.ErrorMessage, "Rate limit reached"))
		return
	case FaultServerError:
		writeError(w, http.StatusInternalServerError, "server_error", orDefault(reply.ErrorMessage, "The server had an error while processing your request"))
		return
	case FaultStatus:
		writeErrorOfType(w, reply.Status, reply.ErrorType, reply.ErrorCode, reply.ErrorMessage)
		return
	case FaultReset:
		reset(w)
		return
	}

	switch {
	case reply.Flood != nil && !stream:
		s.floodPlain(w, r, reply, chat)
	case reply.Flood != nil:
		s.floodStream(w, r, reply, chat, includeUsage)
	case !stream:
		s.respondPlain(w, r, reply, chat)
	default:
		s.respondStream(w, r, reply, chat, includeUsage)
	}
}

func (s *Server) respondPlain(w http.ResponseWriter, r *http.Request, reply Reply, chat openai.ChatCompletionRequest) {
	switch reply.Fault {
	case FaultStallBeforeFirstEvent, FaultStallMidStream:
		if !s.stall(r, reply.StallFor) {
			return
		}
	case FaultMalformedJSON:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-fake","choices":[{"index":0,"message":{"role":"assistant","content":not json}}]}`)
		return
	case FaultErrorInStream:
		w.Header().Set("Content-Type", "application/json")
		body, _ := json.Marshal(map[string]any{"error": reply.streamError()})
		w.Write(body)
		return
	}
	body, _ := json.Marshal(completion(reply, chat))
	if reply.Fault == FaultTruncated {
		truncate(w, "application/json", body[:len(body)/2], len(body))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (s *Server) respondStream(w http.ResponseWriter, r *http.Request, reply Reply, chat openai.ChatCompletionRequest, includeUsage bool) {
	events := streamEvents(reply, chat, includeUsage)
	faultAt := len(events)
	switch reply.Fault {
	case FaultStallBeforeFirstEvent:
		faultAt = 0
	case FaultStallMidStream, FaultMalformedJSON, FaultTruncated, FaultErrorInStream:
		faultAt = min(max(reply.EventsBeforeFault, 1), len(events))
	}

	if reply.Fault == FaultTruncated {
		var buf bytes.Buffer
		for _, e := range events[:faultAt] {
			buf.Write(e)
		}
		// Half of the next event, then the connection closes: a stream cut
		// off mid-chunk, with no [DONE].
		next := []byte("data: {\"id\":\"chatcmpl-fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lost")
		buf.Write(next)
		truncate(w, "text/event-stream", buf.Bytes(), buf.Len()+4096)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	for i, e := range events {
		if i == faultAt {
			switch reply.Fault {
			case FaultStallBeforeFirstEvent, FaultStallMidStream:
				if !s.stall(r, reply.StallFor) {
					return
				}
			case FaultMalformedJSON:
				io.WriteString(w, "data: {\"id\":\"chatcmpl-fake\",\"choices\":[{\"delta\":{\"content\":\"oops\"\n\n")
				flush()
				return
			case FaultErrorInStream:
				w.Write(errorEvent(reply, chat))
				flush()
				return
			}
		}
		if reply.ChunkDelay > 0 && i > 0 && !s.wait(r, reply.ChunkDelay) {
			return
		}
		if _, err := w.Write(e); err != nil {
			return
		}
		flush()
	}
	if reply.EndDelay > 0 {
		s.wait(r, reply.EndDelay)
	}
}

// writeError sends an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeErrorOfType(w, status, "", code, message)
}

// writeErrorOfType is writeError with the error's type; "" gives the type
// OpenAI sends with the status.
func writeErrorOfType(w http.ResponseWriter, status int, typ, code, message string) {
	if status < 100 || status > 999 {
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if typ == "" {
		typ = "invalid_request_error"
		switch {
		case status == http.StatusTooManyRequests:
			typ = "requests"
		case status >= 500:
			typ = "server_error"
		}
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": code}})
	w.Write(body)
}

// reset closes the connection without a response, with SO_LINGER 0 so the
// client sees a TCP reset rather than a clean close.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("fakeserver: the response writer cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// truncate writes a response that promises declared bytes, sends part, and
// closes the connection, so the client's read ends in an unexpected EOF.
func truncate(w http.ResponseWriter, contentType string, part []byte, declared int) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("fakeserver: the response writer cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", contentType, declared)
	buf.Write(part)
	buf.Flush()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
