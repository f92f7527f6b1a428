package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

func TestCallNeedsAnApprovedAction(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("calculator")}, nil, Options{})
	_, err := tb.Call(context.Background(), policy.Approved{})
	if !errors.Is(err, ErrNotApproved) {
		t.Errorf("zero Approved: %v", err)
	}
	// A denied action has no Approved value to pass.
	rules, _ := policy.NewRules(plan.RulesPolicy{Deny: []string{"calculator"}})
	v := policy.NewChain([]policy.Link{{Address: "policy.no", Gate: rules}}, "deny", tb.Validate).
		Gate(context.Background(), policy.Input{Action: policy.Action{Type: policy.ToolCall, Tool: "calculator", Arguments: json.RawMessage(`{"expression":"1"}`)}})
	if v.Approved.Valid() {
		t.Fatal("denied action approved")
	}
	if _, err := tb.Call(context.Background(), v.Approved); !errors.Is(err, ErrNotApproved) {
		t.Errorf("denied action ran: %v", err)
	}
	// A respond action runs no tool.
	v = allowAll(t, tb).Gate(context.Background(), policy.Input{Action: policy.Action{Type: policy.Respond, Content: "hi"}})
	if _, err := tb.Call(context.Background(), v.Approved); err == nil {
		t.Error("a respond action ran a tool")
	}
}

func TestDelegateActionRunsTheDelegateTool(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("delegate")}, nil, Options{Delegate: func(_ context.Context, target, task string) (string, error) {
		return target + " did " + task, nil
	}})
	rules, _ := policy.NewRules(plan.RulesPolicy{Allow: []string{"delegate:target=critic"}})
	v := policy.NewChain([]policy.Link{{Address: "policy.d", Gate: rules}}, "deny", nil).
		Gate(context.Background(), policy.Input{Action: policy.Action{Type: policy.Delegate, Target: "critic", Task: "review"}})
	r, err := tb.Call(context.Background(), v.Approved)
	if err != nil || r.Content != "critic did review" {
		t.Errorf("%q %v", r.Content, err)
	}
}

func TestDispatchKeepsCallOrderAndTheConcurrencyLimit(t *testing.T) {
	var mu sync.Mutex
	inflight, peak := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		peak = max(peak, inflight)
		mu.Unlock()
		var args struct{ N, Wait int }
		json.NewDecoder(r.Body).Decode(&args)
		// Later calls finish first, so completion order differs from call order.
		time.Sleep(time.Duration(args.Wait) * time.Millisecond)
		mu.Lock()
		inflight--
		mu.Unlock()
		fmt.Fprintf(w, "result %d", args.N)
	}))
	defer srv.Close()
	tb := newToolbox(t, []plan.Tool{httpTool("api", srv.URL, "POST")}, nil, Options{})
	var calls []policy.Approved
	for i := 0; i < 8; i++ {
		calls = append(calls, approve(t, tb, "api", fmt.Sprintf(`{"n":%d,"wait":%d}`, i, 40-5*i)))
	}
	out := tb.Dispatch(context.Background(), calls, 3, 5*time.Second)
	if len(out) != 8 {
		t.Fatalf("%d outcomes", len(out))
	}
	for i, o := range out {
		if o.Err != nil || o.Result.Content != fmt.Sprintf("result %d", i) {
			t.Errorf("outcome %d: %q %v", i, o.Result.Content, o.Err)
		}
		if o.Call.Action().Arguments == nil {
			t.Errorf("outcome %d lost its call", i)
		}
	}
	if peak > 3 {
		t.Errorf("%d calls ran at once, limit 3", peak)
	}
}

func TestDispatchTimeoutAndMixedOutcomes(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	tools := []plan.Tool{
		commandTool("hang", map[string]string{"PIDFILE": pidfile}, "./hang.sh"),
		builtinTool("calculator"),
		commandTool("fail", nil, "./fail.sh"),
	}
	tb := newToolbox(t, tools, nil, Options{BaseDir: testdataDir(t)})
	calls := []policy.Approved{
		approve(t, tb, "hang", `{}`),
		approve(t, tb, "calculator", `{"expression":"2+2"}`),
		approve(t, tb, "fail", `{}`),
	}
	out := tb.Dispatch(context.Background(), calls, 0, 200*time.Millisecond)
	wantKind(t, out[0].Err, Timeout)
	if out[1].Err != nil || out[1].Result.Content != "4" {
		t.Errorf("calculator: %+v", out[1])
	}
	wantKind(t, out[2].Err, Error)
	waitGone(t, pidfile, 2)
}

func TestDispatchCancelled(t *testing.T) {
	tb := newToolbox(t, []plan.Tool{builtinTool("calculator")}, nil, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := tb.Dispatch(ctx, []policy.Approved{approve(t, tb, "calculator", `{"expression":"1"}`), approve(t, tb, "calculator", `{"expression":"2"}`)}, 1, time.Second)
	for i, o := range out {
		if o.Err == nil && o.Result.Content == "" {
			t.Errorf("outcome %d is empty", i)
		}
	}
	if !errors.Is(out[1].Err, context.Canceled) {
		t.Errorf("second call after cancellation: %v", out[1].Err)
	}
}
