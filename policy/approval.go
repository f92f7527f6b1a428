package policy

import (
	"context"
	"fmt"
	"time"
)

// Request asks a person to decide one action.
type Request struct {
	ID      string    `json:"id"`
	RunID   string    `json:"run_id,omitempty"`
	Agent   string    `json:"agent"`
	Action  Action    `json:"action"`
	Reason  string    `json:"reason"`           // why a person is asked
	Policy  string    `json:"policy,omitempty"` // the policy that asked, if any
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Timeout overrides the approver's own; zero keeps it.
	Timeout time.Duration `json:"-"`
}

// ApprovalRecord is a person's decision, for the journal: what, who, when.
type ApprovalRecord struct {
	ID       string    `json:"id"`
	Approved bool      `json:"approved"`
	By       string    `json:"by"`  // $USER, --by, or "timeout"
	At       time.Time `json:"at"`  // when the decision was made
	Via      string    `json:"via"` // terminal | queue | timeout
	Reason   string    `json:"reason,omitempty"`
}

// TimeoutRecord is the record of a request nobody answered within (a
// positive limit; zero: its deadline, unnamed): a deny, by and via
// "timeout".
func TimeoutRecord(id string, within time.Duration, at time.Time) ApprovalRecord {
	reason := "nobody answered in time (a timeout is a deny)"
	if within > 0 {
		reason = fmt.Sprintf("nobody answered within %s (a timeout is a deny)", within)
	}
	return ApprovalRecord{ID: id, By: "timeout", Via: "timeout", At: at, Reason: reason}
}

// Approver asks a person. A timeout is not an error: it is a record with
// Approved false and Via "timeout". Errors are failures to ask (I/O, a
// cancelled context).
type Approver interface {
	Approve(ctx context.Context, req Request) (ApprovalRecord, error)
}

// DefaultApprovalTimeout applies when neither the request nor the approver
// sets one.
const DefaultApprovalTimeout = 10 * time.Minute

// Resolve asks a person about a verdict that needs one (Verdict.Ask) and, on
// approval, returns the Approved action, the only way besides Gate to get
// one. A denial or timeout returns an invalid Approved and the record. A
// deny verdict is final: Resolve refuses it with ErrNotAskable.
func (c *Chain) Resolve(ctx context.Context, v Verdict, ap Approver, req Request) (Approved, ApprovalRecord, error) {
	if !v.Ask || v.Decision.Outcome == Deny || v.Decision.Outcome == NotApplicable {
		return Approved{}, ApprovalRecord{}, fmt.Errorf("%w: decision is %s", ErrNotAskable, v.Decision.Outcome)
	}
	req.Action = v.Action
	if req.Reason == "" {
		req.Reason = v.Decision.Reason
		if v.Decision.Outcome != Ask {
			req.Reason = fmt.Sprintf("tool %q needs a person's approval (approval = \"always\")", v.Action.Tool)
		}
	}
	if req.Policy == "" && v.Decision.Outcome == Ask {
		req.Policy = v.Decision.Policy
	}
	rec, err := ap.Approve(ctx, req)
	if err != nil {
		return Approved{}, ApprovalRecord{}, err
	}
	if !rec.Approved {
		return Approved{}, rec, nil
	}
	d := rec.PersonDecision()
	d.Policy = req.Policy
	decisions := append(append([]Decision(nil), v.Decisions...), d)
	return approve(v.Action, decisions), rec, nil
}

// PersonDecision is the record as a Decision, for the journal beside the
// policies' own.
func (r ApprovalRecord) PersonDecision() Decision {
	d := Decision{Outcome: Deny, Engine: "person", Reason: r.Reason}
	if r.Approved {
		d.Outcome = Allow
	}
	if d.Reason == "" {
		d.Reason = fmt.Sprintf("decided by %s via %s", r.By, r.Via)
	}
	return d
}
