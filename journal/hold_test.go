package journal

import (
	"testing"
)

func readTypes(t *testing.T, path string) []string {
	t.Helper()
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// Held lines stay in memory until the next Add, and then reach the file
// with it, in order and numbered as they were held.
func TestHoldWritesWithTheNextAdd(t *testing.T) {
	w := mustCreate(t, t.TempDir(), "r", SyncBackground)
	defer w.Close()
	held, err := w.Hold(Event{Type: ReasoningComplete})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Hold(Event{Type: PolicyEvaluated}); err != nil {
		t.Fatal(err)
	}
	if got := readTypes(t, w.Path()); len(got) != 0 {
		t.Fatalf("held lines reached the file early: %v", got)
	}
	if w.Seq() != 2 || held.Seq != 1 {
		t.Fatalf("seq %d after two holds; first held seq %d", w.Seq(), held.Seq)
	}
	added, err := w.Add(Event{Type: ToolsDispatched})
	if err != nil {
		t.Fatal(err)
	}
	if added.Seq != 3 {
		t.Errorf("added seq %d, want 3", added.Seq)
	}
	got := readTypes(t, w.Path())
	want := []string{ReasoningComplete, PolicyEvaluated, ToolsDispatched}
	if len(got) != len(want) {
		t.Fatalf("file holds %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("file holds %v, want %v", got, want)
		}
	}
	evs, _ := ReadFile(w.Path())
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Errorf("line %d has seq %d", i, ev.Seq)
		}
	}
}

func TestFlushSyncAndCloseWriteHeldLines(t *testing.T) {
	for name, end := range map[string]func(*Writer) error{
		"flush": (*Writer).Flush,
		"sync":  (*Writer).Sync,
		"close": (*Writer).Close,
	} {
		t.Run(name, func(t *testing.T) {
			w := mustCreate(t, t.TempDir(), "r", SyncAlways)
			defer w.Close()
			if _, err := w.Hold(Event{Type: ToolResult}); err != nil {
				t.Fatal(err)
			}
			if err := end(w); err != nil {
				t.Fatal(err)
			}
			if got := readTypes(t, w.Path()); len(got) != 1 || got[0] != ToolResult {
				t.Fatalf("after %s the file holds %v", name, got)
			}
		})
	}
}

// A line over the limit is refused without dropping the lines held before
// it.
func TestHoldRefusesOversizeLineAndKeepsTheRest(t *testing.T) {
	w := mustCreate(t, t.TempDir(), "r", SyncBackground)
	if _, err := w.Hold(Event{Type: ReasoningComplete}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, MaxLineBytes+10)
	for i := range big {
		big[i] = 'a'
	}
	if _, err := w.Hold(Event{Type: ToolResult, Data: []byte(`"` + string(big) + `"`)}); err == nil {
		t.Fatal("an oversize line was held")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readTypes(t, w.Path()); len(got) != 1 || got[0] != ReasoningComplete {
		t.Fatalf("file holds %v", got)
	}
}
