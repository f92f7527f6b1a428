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

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/seal"
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

// LoadPlan returns the plan SavePlan stored for a run, unchecked: see
// VerifiedPlan.
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

// ErrPlanChanged is wrapped by CheckPlan's error: the plan is not the one
// the run started with.
var ErrPlanChanged = errors.New("the plan was changed after the run started")

// VerifiedPlan returns the plan saved with run runID once CheckPlan has
// matched it with the run's events, which must come from ReadRun.
func VerifiedPlan(stateDir, runID string, events []Event) ([]byte, error) {
	b, err := LoadPlan(stateDir, runID)
	if err != nil {
		return nil, err
	}
	if err := CheckPlan(events, b, filepath.Join(RunDir(stateDir, runID), PlanFileName)); err != nil {
		return nil, err
	}
	return b, nil
}

// CheckPlan compares planJSON (named what in the error) with the
// plan_digest of every started line in events: each attempt of a run must
// have run the same plan. The plan's files (scripts, policies, entities,
// schemas) are covered too: the plan holds their text or their sha256,
// which loading checks (plan.FileRef.Load).
func CheckPlan(events []Event, planJSON []byte, what string) error {
	digest := seal.Digest(planJSON)
	started := 0
	for _, ev := range events {
		if ev.Type != Started {
			continue
		}
		started++
		var d StartedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		switch d.PlanDigest {
		case digest:
		case "":
			return fmt.Errorf("the started line (seq %d) records no plan digest to check %s against", ev.Seq, what)
		default:
			return fmt.Errorf("%w: %s has digest %s, but the started line (seq %d) recorded %s", ErrPlanChanged, what, digest, ev.Seq, d.PlanDigest)
		}
	}
	if started == 0 {
		return errors.New("the journal has no started line")
	}
	return nil
}

// Verification is what Verify found: OK, or the first line (0 when the
// fault is not a line's) that failed and why.
type Verification struct {
	RunID      string `json:"run"`
	OK         bool   `json:"ok"`
	Lines      int    `json:"lines"`          // complete lines that verified
	Torn       bool   `json:"torn,omitempty"` // a torn last line (a write cut short by a crash) was skipped
	PlanDigest string `json:"plan_digest,omitempty"`
	Line       int    `json:"line,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Verify checks run runID as resume would before acting on it: every line
// of the journal (ReadRun), and the saved plan against the digest its
// started lines recorded (VerifiedPlan). A run that does not verify is a
// Verification with OK false; the error is for a run that is not there or
// cannot be read at all.
func Verify(stateDir, runID string) (Verification, error) {
	v := Verification{RunID: runID}
	if _, err := os.Stat(Path(stateDir, runID)); err != nil {
		return v, fmt.Errorf("journal: %w", err)
	}
	evs, torn, err := readRun(stateDir, runID)
	v.Lines, v.Torn = len(evs), torn
	var le *LineError
	switch {
	case errors.Is(err, ErrNewerFormat):
		return v, err // not a fault of the journal: this symbi cannot judge it
	case errors.As(err, &le):
		v.Line, v.Error = le.Line, err.Error()
		return v, nil
	case err != nil:
		return v, err
	}
	b, err := VerifiedPlan(stateDir, runID, evs)
	if err != nil {
		v.Error = err.Error()
		return v, nil
	}
	v.OK, v.PlanDigest = true, seal.Digest(b)
	return v, nil
}

// StatusIncomplete is the status of a run whose journal has no terminated
// event and that no process holds: it was killed and can be resumed.
const StatusIncomplete = "incomplete"

// StatusRunning is the status of a run without a terminated event whose
// lock a process holds: it is running, or being resumed.
const StatusRunning = "running"

// StatusUnreadable is the status of a run whose journal could not be read.
const StatusUnreadable = "unreadable"

// StatusTampered is the status of a run whose journal does not verify
// (ErrTampered). A journal that cannot be verified for want of a key is
// unreadable.
const StatusTampered = "tampered"

// StatusNewerFormat is the status of a run whose journal a newer symbi
// wrote (ErrNewerFormat).
const StatusNewerFormat = "newer_format"

// RunSummary is one line of `symbi runs`.
type RunSummary struct {
	ID         string        `json:"id"`
	Agent      string        `json:"agent"`
	Started    time.Time     `json:"started"`
	Finished   time.Time     `json:"finished,omitzero"` // zero when incomplete
	Status     string        `json:"status"`            // the termination reason, or incomplete / running / unreadable / tampered / newer_format
	Limit      string        `json:"limit,omitempty"`   // the budget limit, for budget_exceeded
	Iterations int           `json:"iterations"`
	Usage      budget.Amount `json:"usage"`
	// Reserved is usage reserved but not settled: the terminated event's
	// reserved, or, for a run without one, the estimate of the model call
	// it had started and not finished (in flight when the process died,
	// which a resume charges).
	Reserved budget.Amount `json:"reserved,omitzero"`
	Events   int           `json:"events"`
	LastSeq  int64         `json:"last_seq"`
	Error    string        `json:"error,omitempty"` // why the journal is unreadable or tampered
	// Unsigned is set for a journal without MACs (ErrUnsigned): what it
	// says cannot be verified.
	Unsigned bool `json:"unsigned,omitempty"`
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
	// inFlight is the model call started and not (yet) finished: calls are
	// made one at a time, so it is the last model_call_started without a
	// reasoning_complete after it. A new attempt (started) charged it.
	var inFlight budget.Amount
	for _, ev := range evs {
		if ev.Iteration > s.Iterations {
			s.Iterations = ev.Iteration
		}
		switch ev.Type {
		case Started:
			inFlight = budget.Amount{}
			var d StartedData
			if ev.Decode(&d) == nil && d.Agent != "" && s.Agent == "" {
				s.Agent = d.Agent
			}
		case ModelCallStarted:
			var d ModelCallStartedData
			if ev.Decode(&d) == nil {
				inFlight = budget.Amount{ModelCalls: 1, PromptTokens: d.EstimatedPromptTokens, CompletionTokens: d.EstimatedCompletionTokens,
					TotalTokens: d.EstimatedPromptTokens + d.EstimatedCompletionTokens, CostUSD: d.EstimatedCostUSD}
			}
		case ReasoningComplete:
			inFlight = budget.Amount{}
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
			inFlight = budget.Amount{}
			var d TerminatedData
			if ev.Decode(&d) == nil {
				s.Status, s.Limit, s.Iterations, s.Usage = d.Reason, d.Limit, d.Iterations, d.Usage
				s.Finished = ev.Time
				if d.Reserved != nil {
					s.Reserved = *d.Reserved
				}
			}
		}
	}
	if s.Finished.IsZero() {
		s.Reserved = inFlight
	}
	return s
}

// ListRuns summarizes every run under stateDir, newest first, verifying
// each journal (ReadRun). A journal that cannot be read still gets a line,
// with status unreadable or tampered and the error, so one damaged run does
// not hide the others; an unsigned one is read as it is and marked
// Unsigned. A run without a terminated event is running while a process
// holds its lock, incomplete otherwise. A state directory without runs
// gives an empty list.
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
		if !e.IsDir() || checkRunID(e.Name()) != nil {
			continue
		}
		id := e.Name()
		evs, unsigned, err := ReadToShow(stateDir, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a directory with only a plan: the run never started
		}
		s := Summarize(evs)
		s.ID, s.Unsigned = id, unsigned
		switch {
		case err == nil:
		case errors.Is(err, ErrTampered):
			s.Status, s.Error = StatusTampered, err.Error()
		case errors.Is(err, ErrNewerFormat):
			s.Status, s.Error = StatusNewerFormat, err.Error()
		default:
			s.Status, s.Error = StatusUnreadable, err.Error()
		}
		if s.Status == StatusIncomplete {
			if locked, _ := Locked(stateDir, id); locked {
				s.Status = StatusRunning
			}
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
