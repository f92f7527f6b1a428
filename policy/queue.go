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
	"sync"
	"time"

	"github.com/symbi-dev/symbi/seal"
)

// Queue is the file queue of approval requests in <state_dir>/approvals/.
// A waiting run writes <id>.request.json; `symbi approve` or `symbi deny`
// writes <id>.decision.json, signed with the state directory's key (see
// package seal) and bound to the request (see Binding): the waiting run
// ignores any decision without a valid proof bound to its own request.
// Every file is written to a temporary name and renamed (or linked) into
// place, so a reader never sees half a file, and a decision is linked
// without overwriting, so two people deciding at once cannot both win.
type Queue struct {
	Dir string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Key signs and verifies decisions; the zero Key is the key of the
	// state directory that holds Dir (created on first use).
	Key seal.Key
}

// NewQueue is the queue of a state directory.
func NewQueue(stateDir string) *Queue {
	return &Queue{Dir: filepath.Join(stateDir, "approvals")}
}

// key is the key decisions are signed with.
func (q *Queue) key() (seal.Key, error) {
	if q.Key.Valid() {
		return q.Key, nil
	}
	k, err := seal.Open(filepath.Dir(q.Dir))
	if err != nil {
		return seal.Key{}, fmt.Errorf("approval queue: %w", err)
	}
	return k, nil
}

func (q *Queue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

var requestID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

func checkID(id string) error {
	if !requestID().MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("%w: %q is not a request ID", ErrUnknownRequest, id)
	}
	return nil
}

func (q *Queue) requestPath(id string) string  { return filepath.Join(q.Dir, id+".request.json") }
func (q *Queue) decisionPath(id string) string { return filepath.Join(q.Dir, id+".decision.json") }

// Submit adds a request to the queue, as Prepared made it: the file holds
// the action without its arguments or text, which are in Arguments
// (redacted), beside the digest of the exact arguments.
func (q *Queue) Submit(req Request) error {
	if err := checkID(req.ID); err != nil {
		return err
	}
	req.Action.Arguments, req.Action.Task, req.Action.Content, req.Action.Reason = nil, "", "", ""
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

// Decide records a person's decision on a pending request, signed and
// bound to the request as its file describes it (the run, the ID, the
// action, the arguments' digest). It fails with ErrUnknownRequest when
// there is no such request and ErrAlreadyDecided when someone (or the
// timeout) decided first.
func (q *Queue) Decide(id string, approved bool, by, reason string) (ApprovalRecord, error) {
	rec, _, err := q.DecideBound(id, approved, by, reason)
	return rec, err
}

// DecideBound is Decide, and also returns what the decision is bound to.
func (q *Queue) DecideBound(id string, approved bool, by, reason string) (ApprovalRecord, Binding, error) {
	return q.Answer(id, ApprovalRecord{Approved: approved, By: by, Reason: reason})
}

// Answer records a person's decision on a pending request, as DecideBound
// does, with what an approval may add: edited arguments (a tool call's
// only, a JSON object) and a rule to remember, both signed with the rest.
// ID, At and Via are set here.
func (q *Queue) Answer(id string, rec ApprovalRecord) (ApprovalRecord, Binding, error) {
	req, err := q.Request(id)
	if err != nil {
		return ApprovalRecord{}, Binding{}, err
	}
	if !rec.Approved && (len(rec.Arguments) > 0 || rec.Remember != nil) {
		return ApprovalRecord{}, Binding{}, errors.New("only an approval can edit the arguments or be remembered")
	}
	if len(rec.Arguments) > 0 {
		if req.Action.Type != ToolCall {
			return ApprovalRecord{}, Binding{}, fmt.Errorf("only a tool call's arguments can be edited, not a %s's", req.Action.Type)
		}
		obj, err := argumentsObject(rec.Arguments)
		if err != nil {
			return ApprovalRecord{}, Binding{}, fmt.Errorf("the arguments: %w", err)
		}
		if rec.Arguments, err = marshalCanonical(obj); err != nil {
			return ApprovalRecord{}, Binding{}, err
		}
	}
	if rec.Remember != nil && req.Action.Type != ToolCall {
		return ApprovalRecord{}, Binding{}, fmt.Errorf("only a tool call can be remembered, not a %s", req.Action.Type)
	}
	rec.ID, rec.At, rec.Via = id, q.now(), "queue"
	if !req.Expires.IsZero() && !rec.At.Before(req.Expires) {
		return ApprovalRecord{}, Binding{}, fmt.Errorf("%w: %s expired at %s", ErrAlreadyDecided, id, req.Expires.Format(time.RFC3339))
	}
	key, err := q.key()
	if err != nil {
		return ApprovalRecord{}, Binding{}, err
	}
	b := BindingOf(req)
	b.RequestID = id // the file's name, whatever its content says
	if err := q.writeDecision(key, sign(key, b, rec)); err != nil {
		return ApprovalRecord{}, Binding{}, err
	}
	return rec, b, nil
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

func (q *Queue) writeDecision(key seal.Key, d signedDecision) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := writeTemp(q.Dir, b)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, q.decisionPath(d.ID))
	if errors.Is(err, fs.ErrExist) {
		return q.inTheWay(key, d.ID)
	}
	if err != nil {
		// A filesystem without hard links: fall back to rename, which is
		// atomic but may replace a decision made in the same instant.
		if _, serr := os.Stat(q.decisionPath(d.ID)); serr == nil {
			return q.inTheWay(key, d.ID)
		}
		return os.Rename(tmp, q.decisionPath(d.ID))
	}
	return nil
}

// inTheWay says why a decision could not be written where another is:
// someone decided first (ErrAlreadyDecided), or a file without a valid
// proof is there, which the waiting run discards when it next looks.
func (q *Queue) inTheWay(key seal.Key, id string) error {
	there, ok, err := q.decision(id)
	if err == nil && ok && there.valid(key) {
		return fmt.Errorf("%w: %s", ErrAlreadyDecided, id)
	}
	return fmt.Errorf("%s holds a decision without a valid proof (not written by symbi approve or deny); the waiting run discards it when it next looks (within a second): decide again then", q.decisionPath(id))
}

// decision reads the decision on a request, if there is one yet. A file
// that is not a decision is returned with ok and an error wrapping
// ErrUnreadable; other errors are I/O failures.
func (q *Queue) decision(id string) (signedDecision, bool, error) {
	b, err := os.ReadFile(q.decisionPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return signedDecision{}, false, nil
	}
	if err != nil {
		return signedDecision{}, false, err
	}
	var d signedDecision
	if err := json.Unmarshal(b, &d); err != nil {
		return signedDecision{}, true, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	return d, true, nil
}

// discard takes a refused decision out of the way, so a person's can be
// linked into its place.
func (q *Queue) discard(id string) error {
	if err := os.Remove(q.decisionPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
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

// Approve submits req and waits for `symbi approve` or `symbi deny`. Only a
// decision whose proof verifies under the state key and binds it to this
// request (its run, ID, action and arguments' digest, computed here from
// req.Action) is returned; any other decision file is discarded, reported
// to req.Rejected, and the request file is written again as this run asked
// it, so an edited one cannot mislead the next person.
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
	key, err := q.key()
	if err != nil {
		return ApprovalRecord{}, err
	}
	req = req.Prepared()
	want := BindingOf(req)
	req.Created = q.now()
	req.Expires = req.Created.Add(timeout)
	if err := q.Submit(req); err != nil {
		return ApprovalRecord{}, fmt.Errorf("approval queue: %w", err)
	}
	defer q.remove(req.ID)
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		d, ok, err := q.decision(req.ID)
		if ok && err == nil {
			err = d.check(key, want)
			if err == nil {
				rec := d.ApprovalRecord
				rec.ID = req.ID
				return rec, nil
			}
		}
		switch {
		case ok:
			if derr := q.discard(req.ID); derr != nil {
				return ApprovalRecord{}, fmt.Errorf("approval queue: a refused decision cannot be removed: %w", derr)
			}
			// The request file as this run asked it, before anyone is
			// told: a person acting on the report sees the real one.
			if serr := q.Submit(req); serr != nil {
				return ApprovalRecord{}, fmt.Errorf("approval queue: %w", serr)
			}
			if req.Rejected != nil {
				req.Rejected(Rejection{RequestID: req.ID, Claimed: d.ApprovalRecord, Err: err})
			}
		case err != nil:
			return ApprovalRecord{}, err
		}
		if !q.now().Before(req.Expires) {
			rec := ApprovalRecord{ID: req.ID, By: "timeout", At: q.now(), Via: "timeout",
				Reason: fmt.Sprintf("nobody approved %s within %s (a timeout is a deny)", req.Action, timeout)}
			if err := q.writeDecision(key, sign(key, want, rec)); errors.Is(err, ErrAlreadyDecided) {
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

// AsksConcurrently: every request waits in the queue at once, each
// decided on its own (ConcurrentApprover).
func (a *QueueApprover) AsksConcurrently() bool { return true }

func (a *QueueApprover) newID() string {
	if a.NewID != nil {
		return a.NewID()
	}
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
