package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/symbi-dev/symbi/policy"
)

// Decision is a person's answer to one approval request, sent with the
// DecideUpdate. Binding is what the person decided about, taken from the
// request they were shown (the pending query): the workflow accepts the
// decision only when it binds the waiting request exactly, by run, request
// id, action and arguments digest, as a local run accepts a queue decision
// (policy.Binding). The proof a local queue needs (an HMAC under the state
// key) has no counterpart here: the Update reaches the workflow only
// through the Temporal service, whose namespace authorisation says who may
// send it (docs/temporal.md).
type Decision struct {
	Binding  policy.Binding `json:"binding"`
	Approved bool           `json:"approved"`
	By       string         `json:"by"`
	Reason   string         `json:"reason,omitempty"`
}

func (d Decision) record(at time.Time) policy.ApprovalRecord {
	return policy.ApprovalRecord{ID: d.Binding.RequestID, Approved: d.Approved, By: d.By, At: at, Via: "temporal", Reason: d.Reason}
}

// Why a decision is refused (the Update's validator), for errors.Is on the
// client.
var (
	ErrNoSuchRequest = errors.New("no such approval request waiting")
	ErrBinding       = errors.New("the decision is bound to another request")
)

// validate refuses a decision that does not bind a waiting request: it
// never reaches the history.
func (st *state) validate(d Decision) error {
	req, ok := st.pending[d.Binding.RequestID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoSuchRequest, d.Binding.RequestID)
	}
	if _, done := st.decided[d.Binding.RequestID]; done {
		return fmt.Errorf("%w: %q was decided already", ErrNoSuchRequest, d.Binding.RequestID)
	}
	if want := policy.BindingOf(req); d.Binding != want {
		return fmt.Errorf("%w: the request waiting is %s %s with arguments %s", ErrBinding, want.Action, target(want), want.ArgumentsDigest)
	}
	if d.By == "" {
		return errors.New("a decision names who made it")
	}
	return nil
}

func target(b policy.Binding) string {
	if b.Tool != "" {
		return b.Tool
	}
	return b.Target
}

// approver is the workflow's policy.Approver: the request waits in the
// workflow's state (the pending query shows it) until a DecideUpdate binds
// it or its timeout, a workflow timer, passes: a deny, like a local
// timeout. The wait survives any number of worker restarts.
type approver struct {
	st *state
	rt *runtime
}

func (a *approver) Approve(ctx context.Context, req policy.Request) (policy.ApprovalRecord, error) {
	w := workflowOf(ctx)
	a.st.asked++
	// The id names the run, so `symbi approve ID` finds the workflow.
	req.ID = fmt.Sprintf("%s~a%d", req.RunID, a.st.asked)
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = policy.DefaultApprovalTimeout
	}
	req = req.Prepared()
	req.Created = workflow.Now(w)
	req.Expires = req.Created.Add(timeout)
	req.Redact, req.Rejected = nil, nil
	a.st.pending[req.ID] = req
	a.st.order = append(a.st.order, req.ID)
	defer a.forget(req.ID)
	ok, err := workflow.AwaitWithTimeout(w, timeout, func() bool {
		_, done := a.st.decided[req.ID]
		return done
	})
	a.rt.sync()
	if err != nil {
		return policy.ApprovalRecord{}, context.Canceled
	}
	if !ok {
		return policy.TimeoutRecord(req.ID, timeout, workflow.Now(w)), nil
	}
	return a.st.decided[req.ID], nil
}

func (a *approver) forget(id string) {
	delete(a.st.pending, id)
	for i, x := range a.st.order {
		if x == id {
			a.st.order = append(a.st.order[:i], a.st.order[i+1:]...)
			break
		}
	}
}
