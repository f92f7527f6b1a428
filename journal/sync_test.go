package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// syncRecorder records what the writer syncs, and when.
type syncRecorder struct {
	mu    sync.Mutex
	syncs []syncRecord
}

type syncRecord struct {
	name string
	at   time.Time
}

func (r *syncRecorder) option() Option {
	return func(w *Writer) {
		w.syncFile = func(f *os.File) error {
			r.mu.Lock()
			r.syncs = append(r.syncs, syncRecord{f.Name(), time.Now()})
			r.mu.Unlock()
			return f.Sync()
		}
	}
}

// of is the times name was synced.
func (r *syncRecorder) of(name string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, s := range r.syncs {
		if s.name == name {
			out = append(out, s.at)
		}
	}
	return out
}

// waitFor polls until cond holds; the limit detects a hang, it is not a
// speed bound.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func appendLine(t *testing.T, w *Writer) {
	t.Helper()
	if err := w.Append(Event{Agent: "a", Type: Started, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// With background syncing, the first sync of the lines waits until
// SyncInterval after the writer started, like every later one, and a line
// is still synced within about SyncInterval.
func TestBackgroundFirstSyncWaitsTheInterval(t *testing.T) {
	rec := &syncRecorder{}
	start := time.Now()
	w, err := Create(t.TempDir(), "run", SyncBackground, rec.option())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	appendLine(t, w)
	if !waitFor(func() bool { return len(rec.of(w.Path())) > 0 }) {
		t.Fatal("the line was never synced in the background")
	}
	if waited := rec.of(w.Path())[0].Sub(start); waited < SyncInterval {
		t.Errorf("the first background sync came %v after the writer started, before SyncInterval (%v)", waited, SyncInterval)
	}
}

// The directory entries Create made are synced as the writer starts, with
// no line written yet; a run that ends before SyncInterval has its lines
// synced once, by Close, and each directory once.
func TestBackgroundShortRunSyncs(t *testing.T) {
	rec := &syncRecorder{}
	state := t.TempDir()
	start := time.Now()
	w, err := Create(state, "run", SyncBackground, rec.option())
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{RunDir(state, "run"), filepath.Join(state, "runs")}
	if !waitFor(func() bool { return len(rec.of(dirs[0])) > 0 && len(rec.of(dirs[1])) > 0 }) {
		t.Fatal("the run's directories were not synced until a line was")
	}
	for range 3 {
		appendLine(t, w)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) >= SyncInterval {
		t.Skip("the machine took longer than SyncInterval for the whole run")
	}
	for _, name := range append(dirs, w.Path()) {
		if n := len(rec.of(name)); n != 1 {
			t.Errorf("%s synced %d times, want once", name, n)
		}
	}
	rec.mu.Lock()
	last := rec.syncs[len(rec.syncs)-1].name
	rec.mu.Unlock()
	if last != w.Path() {
		t.Errorf("the last sync was of %s, not the journal", last)
	}
}
