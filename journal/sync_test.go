package journal

import (
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"
)

// syncRecorder records when the journal file is synced.
type syncRecorder struct {
	mu    sync.Mutex
	times []time.Time
}

func (r *syncRecorder) option() Option {
	return func(w *Writer) {
		w.syncFile = func(f *os.File) error {
			r.mu.Lock()
			r.times = append(r.times, time.Now())
			r.mu.Unlock()
			return f.Sync()
		}
	}
}

func (r *syncRecorder) syncs() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}

// With background syncing, the first sync waits until SyncInterval after
// the writer started, like every later one: a run shorter than that is
// synced once, by Close. A line is still synced within about SyncInterval.
func TestBackgroundFirstSyncWaitsTheInterval(t *testing.T) {
	rec := &syncRecorder{}
	start := time.Now()
	w, err := Create(t.TempDir(), "run", SyncBackground, rec.option())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Event{Agent: "a", Type: Started, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // a hang detector, not a speed bound
	for len(rec.syncs()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	syncs := rec.syncs()
	if len(syncs) == 0 {
		t.Fatal("the line was never synced in the background")
	}
	if waited := syncs[0].Sub(start); waited < SyncInterval {
		t.Errorf("the first background sync came %v after the writer started, before SyncInterval (%v)", waited, SyncInterval)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// A run that ends before the interval: Close's sync is the only one.
	rec = &syncRecorder{}
	start = time.Now()
	w, err = Create(t.TempDir(), "run", SyncBackground, rec.option())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Append(Event{Agent: "a", Type: Started, Data: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.syncs()); n != 1 && time.Since(start) < SyncInterval {
		t.Errorf("a run shorter than SyncInterval was synced %d times", n)
	}
}
