package openai

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/symbi-dev/symbi/plan"
)

// A response body is bounded before go-openai reads it, because go-openai
// holds what it reads without limit: a stream's line whole however long
// (bufio.Reader.ReadBytes), every line of a stream that is not a data: line
// until the stream ends (it parses them as an error body when the stream
// fails), and a plain or an error body whole.
const (
	// lineSlack is what one stream line, or a plain body, may hold beyond
	// twice max_response_bytes: the JSON around the text.
	lineSlack = 64 << 10
	// maxOtherBytes bounds the lines of a stream that go-openai keeps.
	maxOtherBytes = 64 << 10
	// maxErrorBody is what is read of an error response; the rest is
	// dropped, and the error is classified by its status as ever.
	maxErrorBody = 64 << 10
)

// lineLimit is the longest stream line, and the largest plain body, that a
// response of maxBytes can need: its text JSON-escaped (twice as long for
// text of quotes or newlines) and the JSON around it.
func lineLimit(maxBytes int64) int64 { return 2*maxBytes + lineSlack }

// errTooLarge is wrapped by every error of a body that passed its bound.
var errTooLarge = errors.New("response too large")

func tooLarge(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errTooLarge, fmt.Sprintf(format, args...))
}

// bound wraps a response's body in the bound that fits it, and records the
// wrapped body on ex for drain. An exchange passes its bound once: ex.over
// remembers it, so the error is classified as response_too_large whatever
// go-openai makes of the cut-off body.
func bound(resp *http.Response, ex *exchange) {
	switch {
	case resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest:
		resp.Body = &boundedBody{body: resp.Body, left: maxErrorBody, quiet: true}
	case ex.stream:
		resp.Body = newEventStream(resp.Body, lineLimit(ex.maxBytes), maxOtherBytes, ex)
	default:
		resp.Body = &boundedBody{body: resp.Body, left: lineLimit(ex.maxBytes), ex: ex, keep: true}
	}
	ex.body = resp.Body
}

// boundedBody ends a body after its first left bytes: with an error
// recorded on ex, or, when quiet, as if the body ended there. With keep,
// what it passes on is kept in ex.plain too (within the same bound).
type boundedBody struct {
	body  io.ReadCloser
	left  int64
	quiet bool
	keep  bool
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
		if b.keep {
			b.ex.plain = append(b.ex.plain, p[:n]...)
		}
		return n, err
	}
	n = int(b.left)
	b.left = 0
	b.err = io.EOF
	if !b.quiet {
		b.err = tooLarge("the response body is longer than %d bytes", lineLimit(b.ex.maxBytes))
		b.ex.over = b.err
	}
	return n, b.err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// eventStream passes a stream's body on to go-openai within bounds:
//
//   - a line longer than maxLine ends the body with an error;
//   - a comment line (": ping") and the fields go-openai does not use
//     (event:, id:, retry:) reach it as empty lines, so it counts them as it
//     always has (its limit of empty messages) but keeps none of their bytes;
//   - any other line that is not a data: line is passed on and counted,
//     maxOther bytes in all, since go-openai keeps those until the end.
//
// Data lines and blank lines pass unchanged. Lines end at '\n', as
// go-openai splits them.
type eventStream struct {
	body     io.ReadCloser
	maxLine  int64
	maxOther int64
	ex       *exchange

	in        []byte // in[next:end] is read from body and not yet scanned
	next, end int
	readErr   error // the body's, passed on once in is scanned
	err       error // what Read returns from now on

	state   lineState
	done    doneMatch // the data: line being passed, against [DONE]
	head    []byte    // a line's first bytes, while its kind is undecided
	pending []byte    // bytes decided on and not yet passed on
	decided [headMax]byte
	line    int64 // bytes of the current line passed on so far
	other   int64 // bytes of lines go-openai keeps
}

type lineState int

const (
	lineStart   lineState = iota // collecting head
	linePassed                   // passing a data: line or a blank line on
	lineOther                    // passing on, and counting, a line go-openai keeps
	lineDropped                  // dropping a comment or an unused field
)

// fields are the line prefixes that decide a line's kind; headMax bounds a
// head of leading white space, which go-openai trims.
var (
	dataField     = []byte("data:")
	droppedFields = [][]byte{[]byte("event:"), []byte("id:"), []byte("retry:")}
	newline       = []byte("\n")
)

const headMax = 8

func newEventStream(body io.ReadCloser, maxLine, maxOther int64, ex *exchange) *eventStream {
	return &eventStream{body: body, maxLine: maxLine, maxOther: maxOther, ex: ex, in: make([]byte, 4<<10), head: make([]byte, 0, headMax)}
}

func (s *eventStream) Close() error { return s.body.Close() }

func (s *eventStream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(s.pending) > 0 {
			n := copy(p, s.pending)
			s.pending = s.pending[n:]
			return n, nil
		}
		if s.err != nil {
			return 0, s.err
		}
		if s.next < s.end {
			if n := s.scan(p); n > 0 {
				return n, nil
			}
			continue
		}
		if s.readErr != nil {
			// The body ended: a line cut off in its head is passed on as
			// it is, and go-openai sees it end there. A last line
			// "data: [DONE]" without its newline still ends the stream.
			if s.state == lineStart {
				s.pending = s.head
			}
			if s.state == linePassed && s.done.complete() && s.ex != nil {
				s.ex.done = true
			}
			s.err = s.readErr
			continue
		}
		n, err := s.body.Read(s.in)
		s.next, s.end, s.readErr = 0, n, err
	}
}

// scan moves over in[next:end], passing at most len(p) bytes on into p.
// It returns how many it passed; 0 when it only decided or dropped.
func (s *eventStream) scan(p []byte) int {
	in := s.in[s.next:s.end]
	switch s.state {
	case lineStart:
		for i, c := range in {
			s.head = append(s.head, c)
			if s.decide() {
				s.next += i + 1
				return 0
			}
		}
		s.next = s.end
		return 0
	case lineDropped:
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			s.next = s.end
			return 0
		}
		s.next += i + 1
		s.state = lineStart
		s.pending = newline
		return 0
	}
	chunk := in
	if i := bytes.IndexByte(in, '\n'); i >= 0 {
		chunk = in[:i+1]
	}
	n := copy(p, chunk)
	if s.count(n) {
		return 0
	}
	s.next += n
	if s.state == linePassed {
		s.done.feed(p[:n])
	}
	if p[n-1] == '\n' {
		if s.state == linePassed && s.done.complete() && s.ex != nil {
			s.ex.done = true
		}
		s.state = lineStart
	}
	return n
}

// decide settles the kind of the line whose first bytes are in head, once
// they tell it, and reports whether they did. The head is then pending.
func (s *eventStream) decide() bool {
	h := s.head
	ended := h[len(h)-1] == '\n'
	state := lineOther
	s.done = doneMatch{progress: doneFailed}
	switch {
	case bytes.HasPrefix(h, dataField):
		state = linePassed
		// Decided on "data:" exactly: the rest of the line follows.
		s.done = doneMatch{}
	case h[0] == ':' || hasAnyPrefix(h, droppedFields):
		state = lineDropped
	case ended && blank(h):
		// go-openai keeps nothing of a blank line.
		state = linePassed
	case !ended && len(h) < headMax && (isPrefix(h, dataField) || anyIsPrefix(h, droppedFields) || blank(h)):
		return false
	}
	s.head = s.head[:0]
	s.line = 0
	switch {
	case state == lineDropped && ended:
		s.state, s.pending = lineStart, newline
	case state == lineDropped:
		s.state = lineDropped
	default:
		s.state = state
		// Copied: head is reused for the next line; pending is passed on
		// before that line is scanned.
		s.pending = s.decided[:copy(s.decided[:], h)]
		if s.count(len(h)) {
			return true
		}
		if ended {
			s.state = lineStart
		}
	}
	return true
}

// doneMatch follows the text of a data: line after "data:" against the
// end of a stream as go-openai reads it: white space, "[DONE]", white
// space (ASCII white space here; go-openai also trims Unicode's, which no
// server sends).
type doneMatch struct {
	progress int // bytes of "[DONE]" matched; doneFailed once it cannot match
}

const doneFailed = -1

var doneMarker = []byte("[DONE]")

func (d *doneMatch) feed(b []byte) {
	for _, c := range b {
		switch {
		case d.progress == doneFailed:
			return
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f':
			if d.progress != 0 && d.progress != len(doneMarker) {
				d.progress = doneFailed
			}
		case d.progress < len(doneMarker) && c == doneMarker[d.progress]:
			d.progress++
		default:
			d.progress = doneFailed
		}
	}
}

func (d *doneMatch) complete() bool { return d.progress == len(doneMarker) }

// count adds n bytes passed on to the current line, and to the kept
// lines' total when it is one of them; it reports (and records) a bound
// passed.
func (s *eventStream) count(n int) bool {
	s.line += int64(n)
	if s.state == lineOther {
		s.other += int64(n)
	}
	switch {
	case s.line > s.maxLine:
		s.fail(tooLarge("a line of the stream is longer than %d bytes", s.maxLine))
	case s.other > s.maxOther:
		s.fail(tooLarge("the stream sent more than %d bytes outside its data: lines", s.maxOther))
	default:
		return false
	}
	return true
}

func (s *eventStream) fail(err error) {
	s.err, s.pending = err, nil
	if s.ex != nil {
		s.ex.over = err
	}
}

// blank reports whether b is ASCII white space only (go-openai trims
// Unicode white space too; such a line merely counts as kept).
func blank(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return false
		}
	}
	return true
}

func hasAnyPrefix(b []byte, prefixes [][]byte) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// isPrefix reports whether b is the start of field.
func isPrefix(b, field []byte) bool { return bytes.HasPrefix(field, b) }

func anyIsPrefix(b []byte, fields [][]byte) bool {
	for _, f := range fields {
		if isPrefix(b, f) {
			return true
		}
	}
	return false
}

// maxResponseBytes is cfg's bound on one response, the default when unset.
func (m *Model) maxResponseBytes() int64 {
	if m.cfg.MaxResponseBytes > 0 {
		return m.cfg.MaxResponseBytes
	}
	return plan.DefaultMaxResponseBytes
}
