package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

// blockingApprover never answers: it returns when its context ends, as an
// approver whose own timer lost the race with the context's would.
type blockingApprover struct{}

func (blockingApprover) Approve(ctx context.Context, _ policy.Request) (policy.ApprovalRecord, error) {
	<-ctx.Done()
	return policy.ApprovalRecord{}, ctx.Err()
}

// An escalation nobody answers within its timeout is journalled as a
// timeout (a deny), not as a failure to ask, whichever of the approver's
// timer and the question's deadline fired first.
func TestEscalationTimeoutIsJournalledAsATimeout(t *testing.T) {
	hcl := flakyAgentHCL(`
recovery "r" {
  escalate {
    queue   = "ops"
    timeout = "50ms"
  }
}
`)
	p, dir := fixture{"main.hcl": hcl, "script.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[{"tool_calls":[{"id":"c1","name":"flaky","arguments":{"expression":"1"}}]},{"content":"gave up"}]}`)
	e, _ := newEngine(t, p, dir, func(o *Options) {
		withModel(m)(o)
		o.Approver = blockingApprover{}
	})
	res := mustRun(t, e, "a", "x", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	decided := eventsOf(t, journalOf(t, e, res.RunID), journal.ApprovalDecided)
	if len(decided) != 1 {
		t.Fatalf("%d approval_decided events, want 1", len(decided))
	}
	var d journal.ApprovalDecidedData
	if err := decided[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if !d.TimedOut || d.Approved || d.By != "timeout" || strings.Contains(d.Reason, "asking for approval failed") {
		t.Errorf("approval_decided %s, want a timeout", decided[0].Data)
	}
}
