package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

func TestFromPlanBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := FromPlan(ctx, nil, "policy.x", ""); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("nil plan: got %v", err)
	}
	if _, err := FromPlan(ctx, testPlan(), "policy.x", ""); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown address: got %v", err)
	}
	mismatch := plan.Policy{Address: "policy.x", Kind: "opa", Range: plan.Range{Filename: "main.hcl", Line: 3, Column: 1}}
	if _, err := FromPlan(ctx, testPlan(mismatch), "policy.x", ""); err == nil || !strings.Contains(err.Error(), "main.hcl:3:") {
		t.Errorf("kind without block: got %v", err)
	}
	for _, pol := range []plan.Policy{opaPolicy("policy.x", "data.x.y"), cedarPolicy("policy.x")} {
		if _, err := FromPlan(ctx, testPlan(pol), "policy.x", ""); err == nil || !strings.Contains(err.Error(), "no ") {
			t.Errorf("%s without files: got %v", pol.Kind, err)
		}
	}
	if _, err := ChainFromPlan(ctx, nil, "agent.x", "", nil); err == nil {
		t.Error("ChainFromPlan on a nil plan: want an error")
	}
	var a TerminalApprover
	if _, err := a.Approve(ctx, Request{}); err == nil {
		t.Error("zero TerminalApprover: want an error, not a panic")
	}
	var q QueueApprover
	if _, err := q.Approve(ctx, Request{}); err == nil {
		t.Error("QueueApprover without a Queue: want an error, not a panic")
	}
}

// TestOPAWithoutEngineFailsClosed: this test binary links no OPA engine, so
// an opa policy does not load (it never becomes a gate that allows).
func TestOPAWithoutEngineFailsClosed(t *testing.T) {
	p := testPlan(opaPolicy("policy.rego", "data.g.decision", file("g.rego", "package g\n\ndecision := true\n")))
	g, err := FromPlan(context.Background(), p, "policy.rego", t.TempDir())
	if g != nil || !errors.Is(err, ErrNoOPAEngine) || !strings.Contains(err.Error(), "policy/opa") {
		t.Fatalf("FromPlan without an OPA engine: %v, %v; want ErrNoOPAEngine saying what to link", g, err)
	}
	var le LoadErrors
	if !errors.As(err, &le) || le[0].Policy != "policy.rego" {
		t.Errorf("want LoadErrors naming the policy, got %#v", err)
	}
}
