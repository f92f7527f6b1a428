package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Queue is the file queue of approval requests in <state_dir>/approvals/.
// A waiting run writes <id>.request.json; `symbi approve` or `symbi deny`
// writes <id>.decision.json. Every file is written to a temporary name and
// renamed (or linked) into place, so a reader never sees half a file, and a
// decision is linked without overwriting, so two people deciding at once
// cannot both win.
type Queue struct {
	Dir string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NewQueue is the queue of a state directory.
func NewQueue(stateDir string) *Queue {
	return &Queue{Dir: filepath.Join(stateDir, "approvals")}
}

func (q *Queue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

var requestID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func checkID(id string) error {
	if !requestID.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("%w: %q is not a request ID", ErrUnknownRequest, id)
	}
	return nil
}

func (q *Queue) requestPath(id string) string  { return filepath.Join(q.Dir, id+".request.json") }
func (q *Queue) decisionPath(id string) string { return filepath.Join(q.Dir, id+".decision.json") }

// Submit adds a request to the queue.
func (q *Queue) Submit(req Request) error {
	if err := checkID(req.ID); err != nil {
		return err
	}
	b, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(q.Dir, 0o755); err != nil {
		return err
	}
	tmp, err := writeTemp(q.Dir, b)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, q.requestPath(req.ID)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Pending lists the requests nobody has decided yet and that have not
// expired, oldest first.
func (q *Queue) Pending() ([]Request, error) {
	entries, err := os.ReadDir(q.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := q.now()
	var out []Request
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".request.json")
		if !ok || checkID(id) != nil {
			continue
		}
		req, err := q.Request(id)
		if err != nil {
			continue // removed while we read, or not ours
		}
		if _, err := os.Stat(q.decisionPath(id)); err == nil {
			continue
		}
		if !req.Expires.IsZero() && !now.Before(req.Expires) {
			continue
		}
		out = append(out, req)
	}
	slices.SortFunc(out, func(a, b Request) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Request reads one request.
func (q *Queue) Request(id string) (Request, error) {
	if err := checkID(id); err != nil {
		return Request{}, err
	}
	b, err := os.ReadFile(q.requestPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Request{}, fmt.Errorf("%w: %s", ErrUnknownRequest, id)
	}
	if err != nil {
		return Request{}, err
	}
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return Request{}, fmt.Errorf("approval request %s: %w", id, err)
	}
	return req, nil
}

// Decide records a person's decision on a pending request. It fails with
// ErrUnknownRequest when there is no such request and ErrAlreadyDecided when
// someone (or the timeout) decided first.
func (q *Queue) Decide(id string, approved bool, by, reason string) (ApprovalRecord, error) {
	req, err := q.Request(id)
	if err != nil {
		return ApprovalRecord{}, err
	}
	rec := ApprovalRecord{ID: id, Approved: approved, By: by, At: q.now(), Via: "queue", Reason: reason}
	if !req.Expires.IsZero() && !rec.At.Before(req.Expires) {
		return ApprovalRecord{}, fmt.Errorf("%w: %s expired at %s", ErrAlreadyDecided, id, req.Expires.Format(time.RFC3339))
	}
	return rec, q.writeDecision(rec)
}

// Withdraw takes a run's pending requests (and its delegations', whose run
// ids extend it with ".d1" and so on) out of the queue. A run resumed after
// it was killed calls it: the process that waited for those answers is gone
// and the resumed run asks again, so only a request whose answer can still
// reach someone stays listed. It returns how many it withdrew.
func (q *Queue) Withdraw(runID string) (int, error) {
	if runID == "" {
		return 0, nil
	}
	pending, err := q.Pending()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, req := range pending {
		if req.RunID == runID || strings.HasPrefix(req.RunID, runID+".") {
			q.remove(req.ID)
			n++
		}
	}
	return n, nil
}

func (q *Queue) writeDecision(rec ApprovalRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := writeTemp(q.Dir, b)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, q.decisionPath(rec.ID))
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrAlreadyDecided, rec.ID)
	}
	if err != nil {
		// A filesystem without hard links: fall back to rename, which is
		// atomic but may replace a decision made in the same instant.
		if _, serr := os.Stat(q.decisionPath(rec.ID)); serr == nil {
			return fmt.Errorf("%w: %s", ErrAlreadyDecided, rec.ID)
		}
		return os.Rename(tmp, q.decisionPath(rec.ID))
	}
	return nil
}

// decision reads the decision on a request, if there is one yet.
func (q *Queue) decision(id string) (ApprovalRecord, bool, error) {
	b, err := os.ReadFile(q.decisionPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return ApprovalRecord{}, false, nil
	}
	if err != nil {
		return ApprovalRecord{}, false, err
	}
	var rec ApprovalRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return ApprovalRecord{}, false, fmt.Errorf("approval decision %s: %w", id, err)
	}
	return rec, true, nil
}

// remove clears a request and its decision once the waiter has read it; the
// engine's journal keeps the record.
func (q *Queue) remove(id string) {
	os.Remove(q.requestPath(id))
	os.Remove(q.decisionPath(id))
}

func writeTemp(dir string, b []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// QueueApprover asks through the file queue, for runs without a terminal:
// it submits the request and polls for a decision until the timeout, which
// is a deny.
type QueueApprover struct {
	Queue *Queue
	// Timeout is how long to wait; zero is DefaultApprovalTimeout.
	Timeout time.Duration
	// Interval between polls; zero is 250ms.
	Interval time.Duration
	// NewID names a request; nil is 12 random hex digits.
	NewID func() string
}

// Approve submits req and waits for `symbi approve` or `symbi deny`.
func (a *QueueApprover) Approve(ctx context.Context, req Request) (ApprovalRecord, error) {
	if a.Queue == nil {
		return ApprovalRecord{}, errors.New("approval queue: no Queue set")
	}
	if req.ID == "" {
		req.ID = a.newID()
	}
	timeout := a.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	interval := a.Interval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	q := a.Queue
	req.Created = q.now()
	req.Expires = req.Created.Add(timeout)
	if err := q.Submit(req); err != nil {
		return ApprovalRecord{}, fmt.Errorf("approval queue: %w", err)
	}
	defer q.remove(req.ID)
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		rec, ok, err := q.decision(req.ID)
		if err != nil {
			return ApprovalRecord{}, err
		}
		if ok {
			return rec, nil
		}
		if !q.now().Before(req.Expires) {
			rec := ApprovalRecord{ID: req.ID, By: "timeout", At: q.now(), Via: "timeout",
				Reason: fmt.Sprintf("nobody approved %s within %s (a timeout is a deny)", req.Action, timeout)}
			if err := q.writeDecision(rec); errors.Is(err, ErrAlreadyDecided) {
				continue // a person decided in the same instant: theirs stands
			}
			return rec, nil
		}
		select {
		case <-ctx.Done():
			return ApprovalRecord{}, ctx.Err()
		case <-timer.C:
			timer.Reset(interval)
		}
	}
}

func (a *QueueApprover) newID() string {
	if a.NewID != nil {
		return a.NewID()
	}
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
