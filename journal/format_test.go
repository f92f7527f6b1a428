package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// formatJournal writes run "r" under dir: a started line claiming format
// (0: no journal_format, as format 1 wrote it), then two more lines, signed
// as this symbi signs them. It returns the file's lines, each with its
// newline.
func formatJournal(t *testing.T, dir string, format int) []string {
	t.Helper()
	w := mustCreate(t, dir, "r", SyncBackground)
	if err := w.Record("agent.a", 0, Started, StartedData{Agent: "agent.a", Input: "go", JournalFormat: format}); err != nil {
		t.Fatal(err)
	}
	if err := w.Record("agent.a", 1, ToolResult, ToolResultData{CallID: "c", Tool: "t", Output: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Record("agent.a", 1, Terminated, TerminatedData{Reason: "completed", Iterations: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return fileLines(t, dir)
}

// fileLines are the lines of run "r"'s journal under dir, each with its
// newline.
func fileLines(t *testing.T, dir string) []string {
	t.Helper()
	lines := strings.SplitAfter(readString(t, Path(dir, "r")), "\n")
	return lines[:len(lines)-1]
}

func writeLines(t *testing.T, dir string, lines []string) {
	t.Helper()
	if err := os.WriteFile(Path(dir, "r"), []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Format 1 (unsigned, no journal_format): shown as it is, with unsigned
// set, and refused by everything that acts on a journal.
func TestReadFormat1(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, dir, stripAll(formatJournal(t, dir, 0)))
	if evs, err := ReadFile(Path(dir, "r")); err != nil || len(evs) != 3 {
		t.Errorf("ReadFile: %d events, %v", len(evs), err)
	}
	if _, err := ReadRun(dir, "r"); !errors.Is(err, ErrUnsigned) {
		t.Errorf("ReadRun: %v, want ErrUnsigned", err)
	}
	evs, unsigned, err := ReadToShow(dir, "r")
	if err != nil || !unsigned || len(evs) != 3 {
		t.Errorf("ReadToShow: %d events, unsigned %v, %v", len(evs), unsigned, err)
	}
	if _, err := OpenAppend(dir, "r", SyncBackground); !errors.Is(err, ErrUnsigned) {
		t.Errorf("OpenAppend: %v, want ErrUnsigned", err)
	}
	runs, err := ListRuns(dir)
	if err != nil || len(runs) != 1 || !runs[0].Unsigned || runs[0].Status != "completed" {
		t.Errorf("ListRuns: %+v, %v", runs, err)
	}
}

// Format 2, this symbi's: verified, and the started line records it.
func TestReadFormat2(t *testing.T) {
	dir := t.TempDir()
	formatJournal(t, dir, FormatVersion)
	evs, err := ReadRun(dir, "r")
	if err != nil || len(evs) != 3 {
		t.Fatalf("ReadRun: %d events, %v", len(evs), err)
	}
	var st StartedData
	if err := evs[0].Decode(&st); err != nil || st.JournalFormat != 2 {
		t.Errorf("started: journal_format %d, %v", st.JournalFormat, err)
	}
	if w, err := OpenAppend(dir, "r", SyncBackground); err != nil {
		t.Errorf("OpenAppend: %v", err)
	} else {
		w.Close()
	}
}

// A journal of a newer format is refused by every reader with
// ErrNewerFormat on its started line, which names both versions: whether
// the newer symbi signs lines as this one does, otherwise, or not at all,
// and whether the whole journal is newer or only an attempt a newer symbi
// resumed.
func TestReadNewerFormat(t *testing.T) {
	newer := FormatVersion + 1
	// rewrite writes a journal of the newer format, then has edit change
	// its lines.
	rewrite := func(edit func([]string) []string) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			writeLines(t, dir, edit(formatJournal(t, dir, newer)))
		}
	}
	for _, tc := range []struct {
		name    string
		journal func(*testing.T, string)
		line    int // the started line of the newer format
	}{
		{"signed as this symbi signs", rewrite(func(l []string) []string { return l }), 1},
		{"signed otherwise", rewrite(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"mac":"`, `"mac":"ff`, 1)
			return l
		}), 1},
		{"not signed", rewrite(stripAll), 1},
		// A resume by a newer symbi appends a started line of its format
		// to a journal of this one's.
		{"resumed by a newer symbi", func(t *testing.T, dir string) {
			formatJournal(t, dir, FormatVersion)
			lines := fileLines(t, dir)
			writeLines(t, dir, lines[:2]) // killed before it ended
			w, err := OpenAppend(dir, "r", SyncBackground)
			if err != nil {
				t.Fatal(err)
			}
			w.Record("agent.a", 1, Started, StartedData{Agent: "agent.a", Input: "go", Resume: 2, JournalFormat: newer})
			w.Record("agent.a", 1, Terminated, TerminatedData{Reason: "completed", Iterations: 1})
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}, 3},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			tc.journal(t, dir)
			want := fmt.Sprintf("journal line %d: the journal was written by a newer symbi: its started line is in journal format %d, and this symbi reads formats 1 to %d; read it with a newer symbi", tc.line, newer, FormatVersion)
			check := func(what string, n int, err error) {
				t.Helper()
				var le *LineError
				if !errors.Is(err, ErrNewerFormat) || !errors.As(err, &le) || le.Line != tc.line || !strings.HasSuffix(err.Error(), want) {
					t.Errorf("%s: %v; want %q", what, err, want)
				}
				if n != tc.line-1 {
					t.Errorf("%s: %d events before the newer line, want %d", what, n, tc.line-1)
				}
			}
			evs, err := ReadRun(dir, "r")
			check("ReadRun", len(evs), err)
			evs, unsigned, err := ReadToShow(dir, "r")
			check("ReadToShow", len(evs), err)
			if unsigned {
				t.Error("ReadToShow: a newer journal read as an unsigned one")
			}
			evs, err = ReadFile(Path(dir, "r"))
			check("ReadFile", len(evs), err)
			_, err = OpenAppend(dir, "r", SyncBackground)
			check("OpenAppend", tc.line-1, err)
			if _, err := Verify(dir, "r"); !errors.Is(err, ErrNewerFormat) {
				t.Errorf("Verify: %v, want ErrNewerFormat", err)
			}
			runs, err := ListRuns(dir)
			if err != nil || len(runs) != 1 || runs[0].Status != StatusNewerFormat || !strings.Contains(runs[0].Error, want) {
				t.Errorf("ListRuns: %+v, %v", runs, err)
			}
		})
	}
	// Nothing about the format is read from lines that are not started
	// lines: a tool's output that looks like one is only output.
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	w.Record("agent.a", 0, Started, StartedData{Input: "go", JournalFormat: FormatVersion})
	w.Record("agent.a", 1, ToolResult, ToolResultData{Output: `{"event":"started","data":{"journal_format":99}}`, Error: `"journal_format":99`})
	w.Close()
	if _, err := ReadRun(dir, "r"); err != nil {
		t.Errorf("ReadRun: %v", err)
	}
	if _, err := Verify(dir, "nothing-here"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Verify of no run: %v", err)
	}
}
