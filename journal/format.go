package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// FormatVersion is the format this symbi writes, recorded in every started
// line as journal_format. The format changes, and this number with it,
// whenever a journal written by this symbi could be misread by an older one;
// a field that older readers may ignore does not change it. Every version
// this symbi reads has journals under testdata/journals that the tests show,
// verify and resume (docs/journal.md, "Format versions"):
//
//	1  unsigned: no MACs, no journal_format (the field is absent); shown
//	   with a warning, never resumed
//	2  every line ends with a MAC chained to the line before it (chain.go);
//	   started lines record journal_format and plan_digest
//
// A reader that meets a started line of a newer format stops there with
// ErrNewerFormat: what the newer symbi changed, this one cannot know.
const FormatVersion = 2

// ErrNewerFormat is wrapped by the LineError for a started line whose
// journal_format is newer than FormatVersion: the journal, or the attempt
// that line opens (a resume by a newer symbi), was written by a newer symbi
// and must be read by one.
var ErrNewerFormat = errors.New("the journal was written by a newer symbi")

// formatOf is the journal_format a started line claims; 0 when the line is
// not a started line or claims none (format 1).
func formatOf(line []byte) int {
	if !bytes.Contains(line, []byte(`"journal_format"`)) {
		return 0
	}
	var ev struct {
		Type string `json:"event"`
		Data struct {
			JournalFormat int `json:"journal_format"`
		} `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Type != Started {
		return 0
	}
	return ev.Data.JournalFormat
}

// checkFormat refuses a started line of a newer format than this symbi's.
func checkFormat(line []byte) error {
	if v := formatOf(line); v > FormatVersion {
		return fmt.Errorf("%w: its started line is in journal format %d, and this symbi reads formats 1 to %d; read it with a newer symbi", ErrNewerFormat, v, FormatVersion)
	}
	return nil
}
