package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/symbi-dev/symbi/seal"
)

// LineError is a complete line that cannot be read: corrupt JSON, a
// missing field, a seq out of order, or (for a verifying reader) a MAC that
// does not verify. Line counts from 1.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("journal line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// ErrLineTooLong is wrapped by a LineError for a line over MaxLineBytes.
var ErrLineTooLong = errors.New("line longer than the journal's limit")

// Reader streams events from a journal. A last line without its newline is
// a write cut short by a crash: Next reports io.EOF before it, and Torn
// says it was there.
type Reader struct {
	r       *bufio.Reader
	chain   *chain // nil: lines are not verified
	line    int
	offset  int64 // bytes in complete lines read so far
	lastSeq int64
	torn    bool
	err     error
	buf     []byte
	maxLine int // MaxLineBytes; smaller in tests
}

// NewReader reads events from r without checking their MACs: for showing
// what a file holds. Anything that acts on a journal reads it with
// NewVerifyingReader or ReadRun.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), maxLine: MaxLineBytes}
}

// NewVerifyingReader reads run runID's journal from r and checks every
// complete line's MAC under key before it parses the line: the first line
// that does not verify is a LineError wrapping ErrTampered, or ErrUnsigned
// when the journal's first line has no MAC at all. A torn last line is not
// verified; it is skipped, as by NewReader.
func NewVerifyingReader(r io.Reader, key seal.Key, runID string) *Reader {
	jr := NewReader(r)
	jr.chain = newChain(key, runID)
	return jr
}

// Next returns the next event, or io.EOF after the last complete line.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	ev, err := r.next()
	if err != nil {
		r.err = err
	}
	return ev, err
}

func (r *Reader) next() (Event, error) {
	line, complete, err := r.readLine()
	if err != nil {
		return Event{}, err
	}
	if !complete {
		r.torn = len(line) > 0
		return Event{}, io.EOF
	}
	r.line++
	r.offset += int64(len(line)) + 1
	if r.chain != nil {
		if err := r.chain.check(line, r.line); err != nil {
			// A newer format may sign its lines otherwise, or not at all:
			// its version, not the MAC it lacks, is the reason to give.
			if ferr := checkFormat(line); ferr != nil {
				err = ferr
			}
			return Event{}, &LineError{Line: r.line, Err: err}
		}
	}
	ev, err := parseLine(line)
	if err != nil {
		return Event{}, &LineError{Line: r.line, Err: err}
	}
	if ev.Type == Started {
		if err := checkFormat(line); err != nil {
			return Event{}, &LineError{Line: r.line, Err: err}
		}
	}
	if ev.Seq != r.lastSeq+1 {
		return Event{}, &LineError{Line: r.line, Err: fmt.Errorf("seq %d follows seq %d", ev.Seq, r.lastSeq)}
	}
	r.lastSeq = ev.Seq
	return ev, nil
}

// readLine returns the next line without its newline, and whether the
// newline was there. bufio.Scanner is not used: it fails on lines over
// 64 KiB, and a tool result can be longer than that.
func (r *Reader) readLine() ([]byte, bool, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		if len(r.buf)+len(chunk) > r.maxLine+1 {
			return nil, false, &LineError{Line: r.line + 1, Err: ErrLineTooLong}
		}
		r.buf = append(r.buf, chunk...)
		switch err {
		case nil:
			return r.buf[:len(r.buf)-1], true, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			return r.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

func parseLine(line []byte) (Event, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return Event{}, errors.New("empty line")
	}
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("not a journal event: %w", err)
	}
	switch {
	case ev.Seq < 1:
		return Event{}, fmt.Errorf("seq %d: want 1 or more", ev.Seq)
	case ev.Type == "":
		return Event{}, errors.New(`no "event" type`)
	case ev.Time.IsZero():
		return Event{}, errors.New(`no "ts" timestamp`)
	case ev.Iteration < 0:
		return Event{}, fmt.Errorf("iteration %d is negative", ev.Iteration)
	}
	if len(ev.Data) > 0 && bytes.Equal(ev.Data, []byte("null")) {
		ev.Data = nil
	}
	return ev, nil
}

// Torn reports whether the input ended in an incomplete line, which Next
// skipped. Valid once Next has returned io.EOF.
func (r *Reader) Torn() bool { return r.torn }

// Offset is the number of bytes in the complete lines read so far: where a
// torn last line begins.
func (r *Reader) Offset() int64 { return r.offset }

// ReadAll returns every event up to io.EOF.
func ReadAll(r io.Reader) ([]Event, error) {
	jr := NewReader(r)
	var evs []Event
	for {
		ev, err := jr.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// ReadFile reads a whole journal without verifying it (see ReadRun). On a
// corrupt line it returns the events before it along with the error, which
// names the file and the line.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	evs, err := ReadAll(f)
	if err != nil {
		return evs, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}

// ReadRun reads run runID's journal under stateDir and verifies every line
// with the state directory's key: what resume, `symbi runs show` and
// `symbi runs verify` read. On the first line that does not verify it
// returns the events before it (all verified) and a LineError wrapping
// ErrTampered or ErrUnsigned; without a key to verify with, it wraps
// ErrUnverifiable and seal.ErrNoKey (or says why the key cannot be read).
func ReadRun(stateDir, runID string) ([]Event, error) {
	evs, _, err := readRun(stateDir, runID)
	return evs, err
}

// readRun is ReadRun, also saying whether a torn last line was skipped.
func readRun(stateDir, runID string) ([]Event, bool, error) {
	if err := checkRunID(runID); err != nil {
		return nil, false, err
	}
	path := Path(stateDir, runID)
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	key, kerr := seal.Read(stateDir)
	var jr *Reader
	if kerr != nil {
		// Without a key only an unsigned journal can be told from a signed
		// one; every signed line fails with the key's error.
		jr = NewReader(f)
		jr.chain = &chain{keyErr: kerr}
	} else {
		jr = NewVerifyingReader(f, key, runID)
	}
	var evs []Event
	for {
		ev, err := jr.Next()
		if err == io.EOF {
			return evs, jr.Torn(), nil
		}
		if err != nil {
			return evs, false, fmt.Errorf("%s: %w", path, err)
		}
		evs = append(evs, ev)
	}
}

// ReadToShow is ReadRun for showing a run, never for acting on it: an
// unsigned journal is read as it is, with unsigned set, so the caller can
// show it with a warning that nothing in it is verified.
func ReadToShow(stateDir, runID string) (evs []Event, unsigned bool, err error) {
	evs, err = ReadRun(stateDir, runID)
	if errors.Is(err, ErrUnsigned) {
		evs, err = ReadFile(Path(stateDir, runID))
		return evs, true, err
	}
	return evs, false, err
}
