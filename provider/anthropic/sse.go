package anthropic

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseReader reads server-sent events (text/event-stream) as the Messages
// API writes them, and as the official SDK's decoder read them:
//
//   - a line ends at '\n', and a '\r' before it is dropped;
//   - "event: X" names the event, "data: …" adds a line to its data (lines
//     joined with '\n'), a line beginning with ':' is a comment, and other
//     fields (id:, retry:, anything else) are ignored; one space after the
//     colon is dropped;
//   - a blank line dispatches the event, unless it had neither name nor
//     data;
//   - an event the body ends in the middle of is not dispatched.
//
// It holds one event at a time, and no more than max bytes of it (its
// lines, their ends not counted): a longer event fails with errTooLarge.
// The body is also bounded before it reaches the reader (eventBound, which
// records the bound on the exchange); this bound makes the reader safe on
// its own.
type sseReader struct {
	r    *bufio.Reader
	max  int
	line []byte // the line being put together when it spans the buffer
	data []byte // the event's data lines, joined
	err  error  // sticky
}

// sseBuffer is the reader's buffer: a line longer than this is put
// together in sseReader.line.
const sseBuffer = 32 << 10

func newSSEReader(body io.Reader, max int) *sseReader {
	return newSSEReaderSize(body, max, sseBuffer)
}

// newSSEReaderSize is newSSEReader with a buffer of size bytes (at least 16).
func newSSEReaderSize(body io.Reader, max, size int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(body, size), max: max}
}

// next returns the next event: its name and its data. The data is valid
// until the next call. At the end of the body it returns io.EOF; a body
// that fails returns its error; an event longer than the bound returns an
// error wrapping errTooLarge. After an error every call returns it.
func (s *sseReader) next() (name string, data []byte, err error) {
	if s.err != nil {
		return "", nil, s.err
	}
	s.data = s.data[:0]
	size := 0 // bytes of the event's lines so far
	hasData := false
	for {
		line, err := s.readLine(size)
		if err != nil {
			s.err = err
			return "", nil, err
		}
		if len(line) == 0 {
			if name == "" && !hasData {
				size = 0
				continue
			}
			return name, s.data, nil
		}
		size += len(line)
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "":
			// A comment.
		case "event":
			name = string(value)
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			hasData = true
		}
	}
}

// readLine returns the next line without its end. used is what the event
// has held so far: the line may bring it to s.max, no further. At the end
// of the body it returns io.EOF; a last line without its '\n' is dropped
// (no blank line can follow it to dispatch its event), except a lone '\r',
// which is a blank line, as the SDK's scanner read it.
func (s *sseReader) readLine(used int) ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk
			if len(s.line) > 0 {
				s.line = append(s.line, chunk...)
				line = s.line
			}
			line = line[:len(line)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if used+len(line) > s.max {
				return nil, s.tooLong()
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.line = append(s.line, chunk...)
			// One byte more than the bound may be the '\r' of the
			// line's end.
			if used+len(s.line) > s.max+1 {
				return nil, s.tooLong()
			}
		case err == io.EOF && len(s.line) == 0 && string(chunk) == "\r":
			return chunk[:0], nil
		default:
			return nil, err
		}
	}
}

func (s *sseReader) tooLong() error {
	return tooLarge("an event of the stream is longer than %d bytes", s.max)
}
