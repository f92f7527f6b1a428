package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/policy"
)

// waitingApprover holds several requests open at once: it answers none
// until every one it expects has arrived, then answers each by its
// expression (the first denied, the rest approved), the last first.
type waitingApprover struct {
	want int
	mu   sync.Mutex
	seen []policy.Request
	all  chan struct{}
}

func (a *waitingApprover) AsksConcurrently() bool { return true }

func (a *waitingApprover) Approve(ctx context.Context, req policy.Request) (policy.ApprovalRecord, error) {
	a.mu.Lock()
	a.seen = append(a.seen, req)
	if len(a.seen) == a.want {
		close(a.all)
	}
	a.mu.Unlock()
	select {
	case <-a.all:
	case <-ctx.Done():
		return policy.ApprovalRecord{}, ctx.Err()
	case <-time.After(time.Minute): // a hang detector, not a speed limit
		return policy.ApprovalRecord{}, context.DeadlineExceeded
	}
	var args struct{ Expression string }
	json.Unmarshal(req.Action.Arguments, &args)
	return policy.ApprovalRecord{ID: req.ID, Approved: args.Expression != "1+1", By: "tester", Via: "test"}, nil
}

// orderedApprover asks one question at a time and remembers the order.
type orderedApprover struct {
	mu    sync.Mutex
	order []string
}

func (a *orderedApprover) Approve(_ context.Context, req policy.Request) (policy.ApprovalRecord, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.order = append(a.order, req.Action.CallID)
	return policy.ApprovalRecord{ID: req.ID, Approved: true, By: "tester", Via: "test"}, nil
}

// Two asks of one turn: an approver that holds requests open gets both
// before answering either (the waiting approver would wait forever
// otherwise), and each answer decides its own call; one that asks a
// question at a time is asked in the order the model proposed them.
func TestAsksOfOneTurnArePendingTogether(t *testing.T) {
	ask := `
policy "rules" {
  rules {
    ask = ["calculator"]
  }
}
`
	p, dir := fixture{"main.hcl": agentHCL(ask, "policies = [policy.rules]"), "script.json": `{"turns":[]}`}.compile(t)
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"1+1"}},{"id":"c2","name":"calculator","arguments":{"expression":"2+2"}},{"id":"c3","name":"calculator","arguments":{"expression":"3+3"}}]},{"content":"done"}]}`

	m := scriptedModel(t, script)
	wa := &waitingApprover{want: 3, all: make(chan struct{})}
	e, _ := newEngine(t, p, dir, func(o *Options) {
		withModel(m)(o)
		o.Approver = wa
	})
	if res := mustRun(t, e, "a", "x", RunOptions{}); res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	var got []string
	for _, msg := range lastToolMessages(m.Requests()[1]) {
		got = append(got, msg.Content)
	}
	if len(got) != 3 || !strings.HasPrefix(got[0], "[not approved: denied_by_approver]") || got[1] != "4" || got[2] != "6" {
		t.Errorf("observations %q, want the first denied and the others run", got)
	}

	m = scriptedModel(t, script)
	oa := &orderedApprover{}
	e, _ = newEngine(t, p, dir, func(o *Options) {
		withModel(m)(o)
		o.Approver = oa
	})
	mustRun(t, e, "a", "x", RunOptions{})
	if strings.Join(oa.order, " ") != "c1 c2 c3" {
		t.Errorf("a one-question-at-a-time approver was asked %v, want c1 c2 c3", oa.order)
	}
}
