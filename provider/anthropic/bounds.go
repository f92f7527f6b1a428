package anthropic

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/symbi-dev/symbi/plan"
)

// A response body is bounded before it is read, because what is read of it
// is held: a stream's event whole (the reader joins its data: lines until
// the blank line that ends it), and a plain or an error body whole
// (io.ReadAll). The stream's reader bounds an event too (sseReader); this
// bound, ahead of it, also records on the exchange that the body passed it.
const (
	// eventSlack is what one event, or a plain body, may hold beyond twice
	// max_response_bytes: the JSON and the fields around the text.
	eventSlack = 64 << 10
	// maxErrorBody is what is read of an error response; the rest is
	// dropped, and the error is classified by what was read as ever.
	maxErrorBody = 64 << 10
)

// eventLimit is the longest event of a stream, and the largest plain body,
// that a response of maxBytes can need: its text JSON-escaped (twice as long
// for text of quotes or newlines) and the JSON around it.
func eventLimit(maxBytes int64) int64 { return 2*maxBytes + eventSlack }

// errTooLarge is wrapped by every error of a body that passed its bound.
var errTooLarge = errors.New("response too large")

func tooLarge(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errTooLarge, fmt.Sprintf(format, args...))
}

// bound wraps a response's body in the bound that fits it, and records the
// wrapped body on ex for drain. An exchange passes its bound once: ex.over
// remembers it, so the error is classified as response_too_large whatever
// the reader makes of the cut-off body.
func bound(resp *http.Response, ex *exchange) {
	switch {
	case resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest:
		resp.Body = &boundedBody{body: resp.Body, left: maxErrorBody, quiet: true}
	case ex.stream:
		resp.Body = &eventBound{body: resp.Body, max: eventLimit(ex.maxBytes), ex: ex}
	default:
		resp.Body = &boundedBody{body: resp.Body, left: eventLimit(ex.maxBytes), ex: ex}
	}
	ex.body = resp.Body
}

// boundedBody ends a body after its first left bytes: with an error
// recorded on ex, or, when quiet, as if the body ended there.
type boundedBody struct {
	body  io.ReadCloser
	left  int64
	quiet bool
	ex    *exchange
	err   error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// Read one byte past the bound, to tell a body of exactly left bytes
	// from a longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = io.EOF
	if !b.quiet {
		b.err = tooLarge("the response body is longer than %d bytes", eventLimit(b.ex.maxBytes))
		b.ex.over = b.err
	}
	return n, b.err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// eventBound passes a stream's body on unchanged and counts the bytes of
// each event: from the end of the last blank line (which ends an event) on.
// An event longer than max ends the body with an error recorded on ex.
// Lines end at '\n'; a line of nothing or of a lone '\r' is blank, as
// sseReader reads them. Comments and fields the reader does not keep count
// too: no event needs max bytes of them.
type eventBound struct {
	body io.ReadCloser
	max  int64
	ex   *exchange

	event int64 // bytes of the current event so far
	line  int64 // bytes of the current line so far, its '\n' not counted
	cr    bool  // the current line so far is a lone '\r'
	err   error
}

func (e *eventBound) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.body.Read(p)
	for i, c := range p[:n] {
		e.event++
		if c == '\n' {
			if e.line == 0 || (e.line == 1 && e.cr) {
				e.event = 0
			}
			e.line, e.cr = 0, false
			continue
		}
		e.cr = e.line == 0 && c == '\r'
		e.line++
		if e.event > e.max {
			e.err = tooLarge("an event of the stream is longer than %d bytes", e.max)
			if e.ex != nil {
				e.ex.over = e.err
			}
			return i, e.err
		}
	}
	return n, err
}

func (e *eventBound) Close() error { return e.body.Close() }

// maxResponseBytes is cfg's bound on one response, the default when unset.
func (m *Model) maxResponseBytes() int64 {
	if m.cfg.MaxResponseBytes > 0 {
		return m.cfg.MaxResponseBytes
	}
	return plan.DefaultMaxResponseBytes
}
