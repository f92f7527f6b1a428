package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReadFixtures reads every journal under testdata/journals, each format
// as this symbi reads it (docs/journal.md, "Format versions"): format 1 is
// shown unsigned and refused by ReadRun; a later format verifies, with
// every started line recording it and the plan its digest. Every format up
// to FormatVersion has fixtures. cmd/symbi's TestJournalFixtures shows and
// resumes them too.
func TestReadFixtures(t *testing.T) {
	dirs, err := filepath.Glob("../testdata/journals/*/format*")
	if err != nil {
		t.Fatal(err)
	}
	formats := map[int]int{}
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		format, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "format"))
		if err != nil {
			t.Errorf("%s: not format<N>", dir)
			continue
		}
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			state := copyState(t, dir)
			runs, err := os.ReadDir(filepath.Join(state, "runs"))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range runs {
				id := r.Name()
				formats[format]++
				shown, unsigned, err := ReadToShow(state, id)
				if err != nil || len(shown) == 0 || unsigned != (format == 1) {
					t.Errorf("%s: ReadToShow: %d events, unsigned %v, %v", id, len(shown), unsigned, err)
				}
				evs, err := ReadRun(state, id)
				if format == 1 {
					if !errors.Is(err, ErrUnsigned) {
						t.Errorf("%s: ReadRun of format 1: %v, want ErrUnsigned", id, err)
					}
					continue
				}
				if err != nil || len(evs) != len(shown) {
					t.Errorf("%s: ReadRun: %d of %d events, %v", id, len(evs), len(shown), err)
					continue
				}
				for _, ev := range evs {
					var st StartedData
					if ev.Type == Started && (ev.Decode(&st) != nil || st.JournalFormat != format) {
						t.Errorf("%s: started line %d records journal_format %d, want %d", id, ev.Seq, st.JournalFormat, format)
					}
				}
				if _, err := VerifiedPlan(state, id, evs); err != nil {
					t.Errorf("%s: %v", id, err)
				}
			}
		})
	}
	for v := 1; v <= FormatVersion; v++ {
		if formats[v] == 0 {
			t.Errorf("no journal of format %d under testdata/journals: %s", v, fmt.Sprint(formats))
		}
	}
}

// copyState copies a fixture's state directory, its files private as symbi
// writes them (a state key that others can read is refused).
func copyState(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}
