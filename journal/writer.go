package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/seal"
)

// SyncMode says when appended lines are forced to stable storage.
type SyncMode int

const (
	// SyncBackground fsyncs at most every SyncInterval while there is
	// unsynced data, and on Close. A killed process loses nothing (the
	// kernel has every line); a power loss may lose the last interval.
	SyncBackground SyncMode = iota
	// SyncAlways fsyncs every line before Append returns.
	SyncAlways
)

// SyncInterval is the longest SyncBackground leaves data unsynced while the
// writer is busy.
const SyncInterval = 100 * time.Millisecond

// MaxLineBytes bounds one journal line. Readers refuse longer lines rather
// than allocate without limit on a damaged file, so writers refuse them too.
const MaxLineBytes = 64 << 20

// FileName is the journal's name inside its run directory.
const FileName = "journal.jsonl"

func (m SyncMode) String() string {
	switch m {
	case SyncBackground:
		return "background"
	case SyncAlways:
		return "always"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// ParseSyncMode reads the journal_sync setting; "" is background.
func ParseSyncMode(s string) (SyncMode, error) {
	switch s {
	case "background", "":
		return SyncBackground, nil
	case "always":
		return SyncAlways, nil
	}
	return 0, fmt.Errorf("journal_sync %q: want background or always", s)
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("journal: writer closed")

// Option configures a Writer.
type Option func(*Writer)

// WithClock sets where event timestamps come from (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(w *Writer) { w.now = now }
}

// WithKey signs the lines with key instead of the state directory's own
// (seal.Open), which the caller has read already.
func WithKey(key seal.Key) Option {
	return func(w *Writer) { w.key = key }
}

// WithLock gives OpenAppend the run's lock, which the caller took before
// reading the journal to decide how to go on. Once OpenAppend succeeds the
// writer holds it and releases it on Close; if it fails, the caller still
// does. Create refuses it: a new run's lock is Create's to take.
func WithLock(l *RunLock) Option {
	return func(w *Writer) { w.lock = l }
}

// Writer appends events to one run's journal. It is safe for concurrent use:
// best-of-N candidates and parallel tool calls append at the same time, and
// seq order is the order in which lines reach the file. It holds the run's
// lock (RunLock) from Create or OpenAppend until Close, and signs every line
// (chain.go).
type Writer struct {
	path  string
	runID string
	mode  SyncMode
	now   func() time.Time
	key   seal.Key
	lock  *RunLock
	chain *chain // guarded by mu

	mu     sync.Mutex
	f      *os.File
	seq    int64
	dirty  bool // written since the last sync began
	err    error
	closed bool
	buf    bytes.Buffer // the lines not yet written: held ones, then the one being added

	dirs []string // directories whose entries are not yet synced; guarded by mu

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	syncFile func(*os.File) error // (*os.File).Sync; tests count the syncs
}

// Path returns the journal file's path.
func Path(stateDir, runID string) string {
	return filepath.Join(stateDir, "runs", runID, FileName)
}

// RunDir returns the directory that holds a run's journal and plan.
func RunDir(stateDir, runID string) string {
	return filepath.Join(stateDir, "runs", runID)
}

func checkRunID(runID string) error {
	if runID == "" || runID == "." || runID == ".." || strings.ContainsAny(runID, `/\`+"\x00") {
		return fmt.Errorf("journal: invalid run id %q", runID)
	}
	return nil
}

// Create starts a new journal at <stateDir>/runs/<runID>/journal.jsonl,
// holding the run's lock and signing its lines with the state directory's
// key (created on first use). It fails (with an error matching fs.ErrExist)
// if that journal already exists, so two runs can never share one.
func Create(stateDir, runID string, mode SyncMode, opts ...Option) (*Writer, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	w := newWriter(Path(stateDir, runID), runID, mode, opts)
	if !w.key.Valid() {
		k, err := seal.Open(stateDir)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		w.key = k
	}
	if err := os.MkdirAll(RunDir(stateDir, runID), 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if w.lock != nil {
		return nil, errors.New("journal: WithLock is for OpenAppend; Create takes the new run's lock itself")
	}
	l, err := Lock(stateDir, runID)
	if errors.Is(err, ErrLocked) {
		// Someone holds the run: it exists.
		return nil, fmt.Errorf("journal: run %s: %w: %w", runID, fs.ErrExist, err)
	}
	if err != nil {
		return nil, err
	}
	w.lock = l
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		w.lock.Unlock()
		return nil, fmt.Errorf("journal: %w", err)
	}
	w.chain = newChain(w.key, runID)
	// Syncing the file's lines is not enough after a power loss if the
	// directory entries naming the file were never synced. In background
	// mode the sync loop syncs them as it starts, off the caller's path.
	w.dirs = []string{RunDir(stateDir, runID), filepath.Join(stateDir, "runs")}
	w.start(f, 0)
	if mode == SyncAlways {
		w.syncDirs()
	}
	return w, nil
}

// OpenAppend reopens an existing journal to continue an interrupted run.
// It takes the run's lock (or uses the one WithLock gives) and keeps it
// until Close, so a run that another process is still writing is refused
// with ErrLocked. Every line must verify (ErrUnsigned, ErrTampered: see
// ReadRun); a torn last line is cut off first; numbering and the chain
// continue after the last complete line. A journal that is corrupt before
// its end is an error: the caller should not resume from a history it
// cannot read.
func OpenAppend(stateDir, runID string, mode SyncMode, opts ...Option) (_ *Writer, err error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	w := newWriter(Path(stateDir, runID), runID, mode, opts)
	if w.lock == nil {
		l, lerr := Lock(stateDir, runID)
		if lerr != nil {
			return nil, lerr
		}
		defer func() {
			if err != nil {
				l.Unlock()
			}
		}()
		w.lock = l
	} else if w.lock.runID != runID || !sameDir(w.lock.stateDir, stateDir) {
		return nil, fmt.Errorf("journal: the lock given is run %s's in %s, not run %s's in %s", w.lock.runID, w.lock.stateDir, runID, stateDir)
	}
	if !w.key.Valid() {
		k, err := seal.Read(stateDir)
		if err != nil {
			return nil, fmt.Errorf("journal: cannot verify run %s: %w", runID, err)
		}
		w.key = k
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	r := NewVerifyingReader(f, w.key, runID)
	var last int64
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", w.path, err)
		}
		last = ev.Seq
	}
	if r.Torn() {
		if err := f.Truncate(r.Offset()); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal: cutting torn last line: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	w.chain = r.chain
	w.start(f, last)
	return w, nil
}

// sameDir reports whether two paths name one directory, one of them
// relative to the working directory perhaps.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	aa, aerr := filepath.Abs(a)
	ab, berr := filepath.Abs(b)
	return aerr == nil && berr == nil && aa == ab
}

// newWriter makes a writer with its options applied; start gives it the
// file.
func newWriter(path, runID string, mode SyncMode, opts []Option) *Writer {
	w := &Writer{
		path:  path,
		runID: runID,
		mode:  mode,
		now:   time.Now,
		kick:  make(chan struct{}, 1),
		done:  make(chan struct{}),

		syncFile: (*os.File).Sync,
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

// start gives the writer its open file and the seq it continues after,
// and starts background syncing.
func (w *Writer) start(f *os.File, seq int64) {
	w.f, w.seq = f, seq
	if w.mode == SyncBackground {
		w.wg.Add(1)
		go w.syncLoop()
	}
}

// Path returns the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// RunID returns the run the journal belongs to.
func (w *Writer) RunID() string { return w.runID }

// Seq returns the seq of the last line added, written or held.
func (w *Writer) Seq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// Record marshals data and appends an event of type typ.
func (w *Writer) Record(agent string, iteration int, typ string, data any) error {
	var raw json.RawMessage
	if data != nil {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // a journal is read by people, not embedded in HTML
		if err := enc.Encode(data); err != nil {
			return fmt.Errorf("journal: %s data: %w", typ, err)
		}
		raw = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return w.Append(Event{Agent: agent, Iteration: iteration, Type: typ, Data: raw})
}

// Append writes ev as one line. It assigns Seq and Time (any values the
// caller set are overwritten) and RunID when empty. The line reaches the
// kernel with a single write before Append returns. After a failed write
// the writer refuses further appends: a partial line followed by more lines
// would corrupt the journal's middle, where readers can no longer skip it.
func (w *Writer) Append(ev Event) error {
	_, err := w.Add(ev)
	return err
}

// Add is Append returning the event as written: with its Seq, Time and
// RunID. Reading Seq() after Append would race with
// other appenders; Add's answer is this line's own, fit to show an observer.
// Lines held by Hold go out in the same write, before this one.
func (w *Writer) Add(ev Event) (Event, error) {
	return w.add(ev, false)
}

// Hold is Add for a line that may wait for the next one: it is numbered
// now, kept in memory, and written with the next Add, Flush, Sync or Close,
// all in a single write. A caller holds the lines of work that touches
// nothing outside the process (deciding, not acting) and adds or flushes
// before its next effect on the world, so a process killed in between
// loses only decisions it had not acted on, and the loop pays one write
// where it would pay several.
func (w *Writer) Hold(ev Event) (Event, error) {
	return w.add(ev, true)
}

// Flush writes the held lines, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	return w.flushLocked("held lines")
}

func (w *Writer) add(ev Event, hold bool) (Event, error) {
	// The writer refuses what the reader would refuse, so it never writes a
	// journal that cannot be read back.
	if ev.Type == "" {
		return Event{}, errors.New("journal: event without a type")
	}
	if ev.Iteration < 0 {
		return Event{}, fmt.Errorf("journal: %s event with negative iteration %d", ev.Type, ev.Iteration)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return Event{}, ErrClosed
	}
	if w.err != nil {
		return Event{}, w.err
	}
	ev.Seq = w.seq + 1
	ev.Time = w.now().UTC()
	if ev.Time.IsZero() {
		return Event{}, errors.New("journal: the clock returned the zero time")
	}
	if ev.RunID == "" {
		ev.RunID = w.runID
	}
	held := w.buf.Len()
	if err := encodeBody(&w.buf, &ev); err != nil {
		w.buf.Truncate(held)
		return Event{}, fmt.Errorf("journal: encoding %s event: %w", ev.Type, err)
	}
	if n := w.buf.Len() - held + macSuffixLen + 1; n > MaxLineBytes {
		w.buf.Truncate(held)
		return Event{}, fmt.Errorf("journal: %s event is %d bytes, over the %d-byte line limit", ev.Type, n, MaxLineBytes)
	}
	// Signing the body where it was encoded costs one HMAC, no copy.
	w.chain.sealLine(&w.buf, held)
	w.seq = ev.Seq
	if hold {
		return ev, nil
	}
	if err := w.flushLocked(ev.Type); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// flushLocked writes the buffered lines with one write and syncs as the
// mode says. w.mu is held.
func (w *Writer) flushLocked(what string) error {
	if w.buf.Len() == 0 {
		return nil
	}
	_, err := w.f.Write(w.buf.Bytes())
	w.buf.Reset()
	if w.buf.Cap() > 1<<20 {
		w.buf = bytes.Buffer{} // one huge event must not pin its buffer for the rest of the run
	}
	if err != nil {
		w.err = fmt.Errorf("journal: writing %s to %s: %w", what, w.path, err)
		return w.err
	}
	switch w.mode {
	case SyncAlways:
		if err := w.syncFile(w.f); err != nil {
			w.err = fmt.Errorf("journal: syncing %s: %w", w.path, err)
			return w.err
		}
	default:
		if !w.dirty {
			w.dirty = true
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// syncLoop turns a burst of appends into at most one fsync per
// SyncInterval, off the appending goroutines' path.
//
// The first sync, too, waits until SyncInterval after the loop starts: a
// run that ends sooner (one model call, a short tool loop) is synced once,
// by Close, instead of by a sync that Close would wait for and then repeat.
// No line waits longer than SyncInterval either way.
func (w *Writer) syncLoop() {
	defer w.wg.Done()
	// The directory entries Create made will not change: they are synced
	// now, while the run starts, not with the first lines.
	w.syncDirs()
	last := time.Now()
	timer := time.NewTimer(0)
	<-timer.C
	for {
		select {
		case <-w.kick:
		case <-w.done:
			return
		}
		if wait := SyncInterval - time.Since(last); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-w.done:
				timer.Stop()
				return
			}
		}
		w.mu.Lock()
		w.dirty = false
		w.mu.Unlock()
		// Sync runs without the lock so appends continue meanwhile; a line
		// written during it sets dirty again and is synced next round.
		w.syncDirs()
		err := w.syncFile(w.f)
		last = time.Now()
		if err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.err = fmt.Errorf("journal: syncing %s: %w", w.path, err)
			}
			w.mu.Unlock()
		}
	}
}

// Sync writes any held lines and forces everything written so far to
// stable storage now.
func (w *Writer) Sync() error {
	w.syncDirs()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err == nil {
		if err := w.flushLocked("held lines"); err != nil {
			return err
		}
	}
	w.dirty = false
	if err := w.syncFile(w.f); err != nil {
		return fmt.Errorf("journal: syncing %s: %w", w.path, err)
	}
	return w.err
}

// Close writes any held lines, stops background syncing, syncs a final
// time and closes the file.
// It returns the first write or sync error the writer met, if any. Calling
// Close again returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	if w.err == nil {
		_ = w.flushLocked("held lines") // its error is w.err, returned below
	}
	w.closed = true
	w.mu.Unlock()
	close(w.done)
	// The final sync starts now, while the sync loop ends any sync it is
	// in, rather than after it: syncs that overlap can share one commit of
	// the file system's journal.
	final := make(chan error, 1)
	go func() { final <- w.syncFile(w.f) }()
	w.wg.Wait()

	w.syncDirs()
	serr := <-final
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	if serr != nil && err == nil {
		err = fmt.Errorf("journal: syncing %s: %w", w.path, serr)
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("journal: closing %s: %w", w.path, cerr)
	}
	// The lock goes last: until the final sync another process must not
	// take the run over.
	if w.lock != nil {
		if uerr := w.lock.Unlock(); uerr != nil && err == nil {
			err = uerr
		}
	}
	return err
}

// encodeBody writes ev as encoding/json would with HTML escaping off, but
// without the closing brace: the body that the chain signs and ends with
// the MAC. It is written by hand because the loop appends several lines
// per iteration and reflection was most of Append's cost; TestEncodeLine
// holds it to encoding/json's output.
func encodeBody(buf *bytes.Buffer, ev *Event) error {
	b := buf.AvailableBuffer()
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = ev.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","run":`...)
	b = appendString(b, ev.RunID)
	b = append(b, `,"agent":`...)
	b = appendString(b, ev.Agent)
	b = append(b, `,"iteration":`...)
	b = strconv.AppendInt(b, int64(ev.Iteration), 10)
	b = append(b, `,"event":`...)
	b = appendString(b, ev.Type)
	if len(ev.Data) > 0 {
		b = append(b, `,"data":`...)
	}
	if len(ev.Data) > 0 && isCompactJSON(ev.Data) {
		// Most data comes from json.Marshal and is compact already: one
		// cheap pass proves it, and it is copied as is.
		b = append(b, ev.Data...)
		buf.Write(b)
	} else {
		buf.Write(b)
		if len(ev.Data) > 0 {
			// Compact validates the data and removes any newline a caller's
			// pretty-printing would otherwise put in the middle of the line.
			if err := json.Compact(buf, ev.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendString appends s as a JSON string: as is when it needs no escape
// (run ids, addresses, event types always), else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return appendJSONString(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// syncDirs syncs the directories Create made, once.
func (w *Writer) syncDirs() {
	w.mu.Lock()
	dirs := w.dirs
	w.dirs = nil
	w.mu.Unlock()
	for _, d := range dirs {
		w.syncDir(d)
	}
}

// syncDir makes a directory's entries durable, with w's sync.
func (w *Writer) syncDir(dir string) { syncDirWith(dir, w.syncFile) }

// syncDir makes a directory's entries durable. It is best effort: some
// systems cannot sync a directory, and the lines themselves are already
// safe from a killed process.
func syncDir(dir string) { syncDirWith(dir, (*os.File).Sync) }

func syncDirWith(dir string, sync func(*os.File) error) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = sync(d)
	d.Close()
}

// appendJSONString appends s as a JSON string, HTML characters unescaped.
func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
