package journal

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/symbi-dev/symbi/policy"
)

// PlanFileName is the plan's name inside its run directory.
const PlanFileName = "plan.json"

// NewRunID returns an id that sorts by start time (UTC, to the second) and
// is unique through 32 random bits: 20261202T133000Z-4f3a9c1b. If rand
// fails, the bits come from now's nanoseconds instead, so an id is still
// produced; Create refuses a journal that already exists, so a collision is
// never silent.
func NewRunID(now time.Time, rand io.Reader) string {
	var b [4]byte
	if rand == nil {
		rand = eofReader{}
	}
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		n := now.UnixNano()
		b = [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// SavePlan stores the plan a run uses beside its journal, so `symbi resume`
// runs exactly that plan even if the configuration changed since. The file
// is written whole or not at all (temp file, fsync, rename).
func SavePlan(stateDir, runID string, planJSON []byte) error {
	if err := checkRunID(runID); err != nil {
		return err
	}
	dir := RunDir(stateDir, runID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	tmp, err := os.CreateTemp(dir, PlanFileName+".tmp-*")
	if err != nil {
		return fmt.Errorf("journal: saving plan: %w", err)
	}
	_, err = tmp.Write(planJSON)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, PlanFileName))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("journal: saving plan: %w", err)
	}
	syncDir(dir)
	return nil
}

// LoadPlan returns the plan SavePlan stored for a run.
func LoadPlan(stateDir, runID string) ([]byte, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(RunDir(stateDir, runID), PlanFileName))
	if err != nil {
		return nil, fmt.Errorf("journal: loading plan of run %s: %w", runID, err)
	}
	return b, nil
}

// StatusIncomplete is the status of a run whose journal has no terminated
// event: it is still running, or it was killed and can be resumed.
const StatusIncomplete = "incomplete"

// StatusUnreadable is the status of a run whose journal could not be read.
const StatusUnreadable = "unreadable"

// RunSummary is one line of `symbi runs`.
type RunSummary struct {
	ID         string       `json:"id"`
	Agent      string       `json:"agent"`
	Started    time.Time    `json:"started"`
	Finished   time.Time    `json:"finished,omitzero"` // zero when incomplete
	Status     string       `json:"status"`            // the termination reason, or incomplete / unreadable
	Limit      string       `json:"limit,omitempty"`   // the budget limit, for budget_exceeded
	Iterations int          `json:"iterations"`
	Usage      policy.Usage `json:"usage"`
	Events     int          `json:"events"`
	LastSeq    int64        `json:"last_seq"`
	Error      string       `json:"error,omitempty"` // why the journal is unreadable
}

// Summarize condenses a run's events. A terminated event gives the final
// word; without one, the iterations and usage are those the journal shows
// so far.
func Summarize(evs []Event) RunSummary {
	s := RunSummary{Status: StatusIncomplete, Events: len(evs)}
	if len(evs) == 0 {
		return s
	}
	first, last := evs[0], evs[len(evs)-1]
	s.ID, s.Agent, s.Started, s.LastSeq = first.RunID, first.Agent, first.Time, last.Seq
	for _, ev := range evs {
		if ev.Iteration > s.Iterations {
			s.Iterations = ev.Iteration
		}
		switch ev.Type {
		case Started:
			var d StartedData
			if ev.Decode(&d) == nil && d.Agent != "" && s.Agent == "" {
				s.Agent = d.Agent
			}
		case ReasoningComplete:
			var d ReasoningCompleteData
			if ev.Decode(&d) == nil {
				s.Usage.ModelCalls++
				s.Usage.PromptTokens += d.Usage.PromptTokens
				s.Usage.CompletionTokens += d.Usage.CompletionTokens
				s.Usage.TotalTokens += max(d.Usage.TotalTokens, d.Usage.PromptTokens+d.Usage.CompletionTokens)
				s.Usage.CostUSD += d.CostUSD
			}
		case ToolResult:
			s.Usage.ToolCalls++
		case Terminated:
			var d TerminatedData
			if ev.Decode(&d) == nil {
				s.Status, s.Limit, s.Iterations, s.Usage = d.Reason, d.Limit, d.Iterations, d.Usage
				s.Finished = ev.Time
			}
		}
	}
	return s
}

// ListRuns summarizes every run under stateDir, newest first. A journal
// that cannot be read still gets a line, with status unreadable and the
// error, so one damaged run does not hide the others. A state directory
// without runs gives an empty list.
func ListRuns(stateDir string) ([]RunSummary, error) {
	entries, err := os.ReadDir(filepath.Join(stateDir, "runs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal: listing runs: %w", err)
	}
	var out []RunSummary
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := Path(stateDir, e.Name())
		evs, err := ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a directory with only a plan: the run never started
		}
		s := Summarize(evs)
		s.ID = e.Name()
		if err != nil {
			s.Status, s.Error = StatusUnreadable, err.Error()
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return a.ID > b.ID
	})
	return out, nil
}
