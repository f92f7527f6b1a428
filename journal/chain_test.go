package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/seal"
)

// signedJournal writes n lines to run "r" under dir and returns the file's
// lines, each with its newline.
func signedJournal(t *testing.T, dir string, n int) []string {
	t.Helper()
	w := mustCreate(t, dir, "r", SyncBackground)
	for i := range n {
		if err := w.Record("agent.a", i, ToolResult, ToolResultData{CallID: "c", Output: strings.Repeat("x", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(readString(t, Path(dir, "r")), "\n"), "\n")
}

// TestChainCatchesTampering edits a signed journal the ways an attacker
// without the key could, and expects ReadRun to name the first line that
// no longer verifies.
func TestChainCatchesTampering(t *testing.T) {
	dir := t.TempDir()
	lines := signedJournal(t, dir, 6)
	swap := func(i, j int) []string {
		out := append([]string(nil), lines...)
		out[i], out[j] = out[j], out[i]
		return out
	}
	without := func(i int) []string {
		return append(append([]string(nil), lines[:i]...), lines[i+1:]...)
	}
	edit := func(i int, from, to string) []string {
		out := append([]string(nil), lines...)
		out[i] = strings.Replace(out[i], from, to, 1)
		return out
	}
	for _, tc := range []struct {
		name  string
		lines []string
		line  int // the first line that fails; 0: none
		err   error
	}{
		{"intact", lines, 0, nil},
		{"edited middle line", edit(2, `"output":"xx"`, `"output":"yy"`), 3, ErrTampered},
		{"edited seq and data alike", edit(3, `"iteration":3`, `"iteration":4`), 4, ErrTampered},
		{"deleted middle line", without(2), 3, ErrTampered},
		{"reordered pair", swap(2, 3), 3, ErrTampered},
		{"duplicated line", append(append(append([]string(nil), lines[:3]...), lines[2]), lines[3:]...), 4, ErrTampered},
		{"first line removed", lines[1:], 1, ErrTampered},
		{"MAC in upper case", edit(1, macOf(lines[1]), strings.ToUpper(macOf(lines[1]))), 2, ErrTampered},
		{"MAC stripped from a middle line", edit(4, lines[4][len(lines[4])-macSuffixLen-1:], "}\n"), 5, ErrTampered},
		{"every MAC stripped", stripAll(lines), 1, ErrUnsigned},
		// What the chain cannot see: lines cut off the end look like a run
		// killed earlier (docs/journal.md says so).
		{"tail cut off", lines[:4], 0, nil},
		{"torn last line", append(append([]string(nil), lines[:5]...), lines[5][:20]), 0, nil},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if err := os.WriteFile(Path(dir, "r"), []byte(strings.Join(tc.lines, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			evs, err := ReadRun(dir, "r")
			if tc.line == 0 {
				if err != nil {
					t.Fatalf("ReadRun: %v", err)
				}
				return
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != tc.line || !errors.Is(err, tc.err) {
				t.Fatalf("ReadRun: %v; want line %d: %v", err, tc.line, tc.err)
			}
			if len(evs) != tc.line-1 {
				t.Errorf("%d events before the bad line, want %d", len(evs), tc.line-1)
			}
			// The unverified reader still reads the file as it is.
			if _, err := ReadFile(Path(dir, "r")); errors.Is(err, ErrTampered) {
				t.Errorf("ReadFile verifies: %v", err)
			}
		})
	}
}

// macOf is a line's MAC, in hex.
func macOf(line string) string {
	return line[len(line)-macSuffixLen-1+len(macField) : len(line)-3]
}

func stripAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[:len(l)-macSuffixLen-1] + "}\n"
	}
	return out
}

// TestChainIsBoundToRunAndKey: the same lines do not verify as another
// run's journal, nor under another key, nor without one.
func TestChainIsBoundToRunAndKey(t *testing.T) {
	dir := t.TempDir()
	lines := signedJournal(t, dir, 3)
	os.MkdirAll(RunDir(dir, "other"), 0o700)
	os.WriteFile(Path(dir, "other"), []byte(strings.Join(lines, "")), 0o600)
	if _, err := ReadRun(dir, "other"); !errors.Is(err, ErrTampered) {
		t.Errorf("another run's journal: %v, want ErrTampered", err)
	}
	elsewhere := t.TempDir()
	os.MkdirAll(RunDir(elsewhere, "r"), 0o700)
	os.WriteFile(Path(elsewhere, "r"), []byte(strings.Join(lines, "")), 0o600)
	if _, err := ReadRun(elsewhere, "r"); !errors.Is(err, ErrUnverifiable) || !errors.Is(err, seal.ErrNoKey) {
		t.Errorf("no key: %v, want ErrUnverifiable and seal.ErrNoKey", err)
	}
	if _, err := seal.Open(elsewhere); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRun(elsewhere, "r"); !errors.Is(err, ErrTampered) {
		t.Errorf("another key: %v, want ErrTampered", err)
	}
	if _, err := OpenAppend(elsewhere, "r", SyncBackground); !errors.Is(err, ErrTampered) {
		t.Errorf("OpenAppend under another key: %v, want ErrTampered", err)
	}
}

// TestChainContinues: held lines, lines added after a resume and a torn
// tail cut off by OpenAppend all end in one journal that verifies.
func TestChainContinues(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	w.Hold(Event{Type: ReasoningComplete})
	w.Hold(Event{Type: PolicyEvaluated})
	w.Append(Event{Type: ToolsDispatched})
	w.Hold(Event{Type: ToolResult})
	w.Close()
	f, _ := os.OpenFile(w.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":5,"ts":"2026-12-02T13:3`)
	f.Close()
	w2, err := OpenAppend(dir, "r", SyncAlways, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	w2.Append(Event{Type: Started})
	w2.Hold(Event{Type: Terminated})
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadRun(dir, "r")
	if err != nil || len(evs) != 6 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
}

// FuzzVerifyingReader mutates a signed journal: whatever the verifying
// reader accepts must be, line for line, a prefix of what the writer wrote,
// since no one without the key can make a line verify.
func FuzzVerifyingReader(f *testing.F) {
	dir := f.TempDir()
	key, err := seal.FromBytes(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		f.Fatal(err)
	}
	w, err := Create(dir, "r", SyncBackground, WithKey(key), WithClock(fakeClock()))
	if err != nil {
		f.Fatal(err)
	}
	for i := range 5 {
		w.Record("agent.a", i, ToolResult, ToolResultData{CallID: "c", Output: strings.Repeat("y", i)})
	}
	w.Close()
	orig, err := os.ReadFile(filepath.Join(RunDir(dir, "r"), FileName))
	if err != nil {
		f.Fatal(err)
	}
	want, err := ReadAll(bytes.NewReader(orig))
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	f.Add(orig)
	f.Add(append(append(append([]byte(nil), lines[0]...), lines[2]...), lines[1]...))
	f.Add(bytes.Replace(orig, []byte(`"yy"`), []byte(`"zz"`), 1))
	f.Add(orig[:len(orig)/2])
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewVerifyingReader(bytes.NewReader(in), key, "r")
		got, err := readAll(r)
		if len(got) > len(want) {
			t.Fatalf("%d events accepted, the writer wrote %d", len(got), len(want))
		}
		for i, ev := range got {
			if !bytes.Equal(ev.Data, want[i].Data) || ev.Seq != want[i].Seq || ev.Type != want[i].Type || !ev.Time.Equal(want[i].Time) {
				t.Fatalf("event %d accepted but not written: %+v", i, ev)
			}
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line != len(got)+1 {
				t.Fatalf("error %v does not name line %d", err, len(got)+1)
			}
		}
	})
}

// TestSealLineAllocatesNothing: signing is on every line's path; the loop
// benchmark counts its allocations.
func TestSealLineAllocatesNothing(t *testing.T) {
	key, _ := seal.FromBytes(bytes.Repeat([]byte{1}, 32))
	c := newChain(key, "r")
	var buf bytes.Buffer
	buf.Grow(4096)
	body := []byte(`{"seq":1,"ts":"2026-12-02T13:30:00Z","run":"r","agent":"a","iteration":0,"event":"x"`)
	if n := testing.AllocsPerRun(100, func() {
		buf.Reset()
		buf.Write(body)
		c.sealLine(&buf, 0)
	}); n != 0 {
		t.Errorf("sealLine allocates %v times per line", n)
	}
	buf.Reset()
	buf.Write(body)
	newChain(key, "r").sealLine(&buf, 0) // the first line of a run
	line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	v := newChain(key, "r")
	anchor := v.prev
	if n := testing.AllocsPerRun(100, func() {
		v.prev = anchor
		if err := v.check(line, 1); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("check allocates %v times per line", n)
	}
}
