package journal

import (
	"fmt"
	"strings"
)

// ApprovalTally counts a run's answers from people (approval_decided): how
// many approved, with edited arguments or by a remembered rule, and why
// the others were not, by code.
type ApprovalTally struct {
	Approved         int `json:"approved"`
	Edited           int `json:"edited,omitempty"`   // of Approved, with the person's arguments
	Standing         int `json:"standing,omitempty"` // of Approved, by a remembered rule
	NoApprover       int `json:"no_approver,omitempty"`
	ApprovalTimeout  int `json:"approval_timeout,omitempty"`
	DeniedByApprover int `json:"denied_by_approver,omitempty"`
	ApprovalError    int `json:"approval_error,omitempty"`
}

// Add counts one answer.
func (t *ApprovalTally) Add(d ApprovalDecidedData) {
	switch {
	case d.Approved:
		t.Approved++
		if len(d.Arguments) > 0 {
			t.Edited++
		}
		if d.Via == "standing" {
			t.Standing++
		}
	case d.Code == NoApprover:
		t.NoApprover++
	case d.Code == ApprovalTimeout || d.TimedOut:
		t.ApprovalTimeout++
	case d.Code == ApprovalError:
		t.ApprovalError++
	default:
		t.DeniedByApprover++
	}
}

// Zero reports whether nobody was asked.
func (t ApprovalTally) Zero() bool { return t == ApprovalTally{} }

// String sums it up on one line: "2 approved (1 with edited arguments),
// 1 denied_by_approver, 1 no_approver".
func (t ApprovalTally) String() string {
	var parts []string
	if t.Approved > 0 {
		s := fmt.Sprintf("%d approved", t.Approved)
		var how []string
		if t.Edited > 0 {
			how = append(how, fmt.Sprintf("%d with edited arguments", t.Edited))
		}
		if t.Standing > 0 {
			how = append(how, fmt.Sprintf("%d by a remembered rule", t.Standing))
		}
		if len(how) > 0 {
			s += " (" + strings.Join(how, ", ") + ")"
		}
		parts = append(parts, s)
	}
	for _, c := range []struct {
		n    int
		code string
	}{{t.DeniedByApprover, DeniedByApprover}, {t.ApprovalTimeout, ApprovalTimeout}, {t.NoApprover, NoApprover}, {t.ApprovalError, ApprovalError}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.code))
		}
	}
	return strings.Join(parts, ", ")
}

// ApprovalsOf counts the answers in a run's journal.
func ApprovalsOf(evs []Event) ApprovalTally {
	var t ApprovalTally
	for _, ev := range evs {
		if ev.Type != ApprovalDecided {
			continue
		}
		var d ApprovalDecidedData
		if ev.Decode(&d) == nil {
			t.Add(d)
		}
	}
	return t
}
