package temporal

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/temporal/contract"
)

var (
	record     = flag.Bool("record", false, "run every mode on the Temporal service at SYMBI_TEMPORAL_ADDRESS and keep each history in testdata/histories")
	recordOnly = flag.String("record-only", "", "with -record, record only this case")
)

// A recorded history of every mode, with a frozen copy of the files its
// plan references (the workflow checks their digests when it replays).
// A change to the workflow's code that would break the runs in flight (a
// command added, moved or removed without workflow.GetVersion) fails
// TestReplay.
//
// A best-of-N case (bestOf) also keeps the history of its first
// candidate's child workflow, candidate.json, replayed as a candidate; a
// case with delegated set that of its first delegation's, delegation.json.
// The delegation case was recorded before delegations were child
// workflows (versionFirst), delegation_child after (versionChildDelegations).
var replayCases = []struct {
	name, src, agent, input string
	approve, delegated      bool
	bestOf                  string
	extra                   []string // files the plan runs but does not digest (a command's script)
}{
	{name: "simple", src: "../examples/reflect.hcl", agent: "critic", input: "Rate this: the sky is blue because of Rayleigh scattering."},
	{name: "react", src: "../examples/quickstart.hcl", input: "What is 6 * 7?"},
	{name: "reflect", src: "../examples/reflect.hcl", agent: "writer", input: "In one sentence: why is the sky blue?"},
	{name: "plan_execute", src: "../examples/plan_execute.hcl", input: "Is 6 * 7 equal to 100 - 58?"},
	{name: "delegation", src: "../examples/delegation.hcl", agent: "lead", input: "Why is the sky blue, and is that answer any good?"},
	{name: "delegation_child", src: "../examples/delegation.hcl", agent: "lead", input: "Why is the sky blue, and is that answer any good?", delegated: true},
	{name: "approval", src: "testdata/ask", input: "add 1 and 1", approve: true},
	{name: "best_of_n", src: "../examples/best_of_n.hcl", input: "What is 6 * 7? Answer with the number only.", bestOf: "best_of_n.answer"},
	{name: "best_of_n_selector", src: "../examples/best_of_n_selector.hcl", input: "What is 6 * 7?", bestOf: "best_of_n.concise", extra: []string{"scripts/pick_shortest.sh"}},
	{name: "mcp", src: "testdata/mcp", input: "look"},
	{name: "knowledge", src: "testdata/knowledge", input: "How many moons has Earth?", extra: []string{"facts.db"}},
}

func TestReplay(t *testing.T) {
	if *record {
		recordHistories(t)
	}
	for _, c := range replayCases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "histories", c.name)
			r := worker.NewWorkflowReplayer()
			wf := &Workflows{BaseDir: dir}
			r.RegisterWorkflowWithOptions(wf.Run, workflowOptions())
			r.RegisterWorkflowWithOptions(wf.Candidate, workflow.RegisterOptions{Name: contract.CandidateWorkflow})
			r.RegisterWorkflowWithOptions(wf.Delegation, workflow.RegisterOptions{Name: contract.DelegationWorkflow})
			if err := replay(t, r, dir, "history.json"); err != nil {
				t.Fatalf("replaying the %s history: %v", c.name, err)
			}
			if c.bestOf != "" {
				if err := replay(t, r, dir, "candidate.json"); err != nil {
					t.Fatalf("replaying the %s candidate's history: %v", c.name, err)
				}
			}
			if c.delegated {
				if err := replay(t, r, dir, "delegation.json"); err != nil {
					t.Fatalf("replaying the %s delegation's history: %v", c.name, err)
				}
			}
		})
	}
}

// A workflow that takes one command more than the recorded one (here a
// timer before the run) does not replay: the test above would catch the
// change.
func TestReplayCatchesAChange(t *testing.T) {
	dir := filepath.Join("testdata", "histories", "react")
	wf := &Workflows{BaseDir: dir}
	changed := func(w workflow.Context, in contract.Start) (contract.Output, error) {
		if err := workflow.Sleep(w, time.Second); err != nil {
			return contract.Output{}, err
		}
		return wf.Run(w, in)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(changed, workflowOptions())
	if err := replay(t, r, dir, "history.json"); err == nil {
		t.Fatal("a changed workflow replayed the recorded history")
	}
}

// execution is the recorded run's workflow id and run id: its seeded
// randomness, its run id and its tools' idempotency keys derive from them.
type execution struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Candidate is a best-of-N run's first candidate's child workflow;
	// Delegation a run's first delegation's.
	Candidate  *execution `json:"candidate,omitempty"`
	Delegation *execution `json:"delegation,omitempty"`
}

// replay replays dir's history (history.json, a best-of-N run's
// candidate.json, a delegation's delegation.json) as the execution
// recorded beside it.
func replay(t *testing.T, r worker.WorkflowReplayer, dir, history string) error {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "execution.json"))
	if err != nil {
		t.Fatal(err)
	}
	var x execution
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	switch history {
	case "candidate.json":
		x = *x.Candidate
	case "delegation.json":
		x = *x.Delegation
	}
	f, err := os.Open(filepath.Join(dir, history))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: x.WorkflowID, RunID: x.RunID}})
}

// recordHistories runs every case on a real service with a worker of this
// process and writes each history (and the files its plan references)
// under testdata/histories.
func recordHistories(t *testing.T) {
	addr := os.Getenv("SYMBI_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Fatal("-record needs a Temporal service: set SYMBI_TEMPORAL_ADDRESS")
	}
	ctx := context.Background()
	cl, err := Connection{Address: addr}.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, c := range replayCases {
		if *recordOnly != "" && c.name != *recordOnly {
			continue
		}
		src, _ := compile(t, c.src)
		dir := filepath.Join("testdata", "histories", c.name)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		base := filepath.Dir(c.src)
		if st, err := os.Stat(c.src); err == nil && st.IsDir() {
			base = c.src
		}
		paths := c.extra
		for _, f := range src.Files {
			paths = append(paths, f.Path)
		}
		for _, path := range paths {
			b, err := os.ReadFile(filepath.Join(base, filepath.FromSlash(path)))
			if err != nil {
				t.Fatal(err)
			}
			to := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := compile(t, dir)
		queue := "record-" + c.name + "-" + time.Now().Format("150405.000")
		w, acts := NewWorker(cl, WorkerOptions{BaseDir: dir, TaskQueue: queue})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		agent := c.agent
		if c.bestOf != "" {
			agent = p.BestOfNByAddress(c.bestOf).Agent
		}
		in, err := contract.NewStart(p, dir, agent, c.input)
		if err != nil {
			t.Fatal(err)
		}
		in.BestOfN = c.bestOf
		id := "replay-" + c.name
		tc := &Client{C: cl}
		if err := tc.Start(ctx, id+"-"+queue, queue, in); err != nil {
			t.Fatal(err)
		}
		id += "-" + queue
		if c.approve {
			var reqs []policy.Request
			deadline := time.Now().Add(time.Minute)
			for len(reqs) == 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				reqs, _ = tc.Pending(ctx, id)
			}
			if len(reqs) == 0 {
				t.Fatal("no approval request")
			}
			if _, _, err := tc.Decide(ctx, reqs[0].ID, true, "recorder", "fine"); err != nil {
				t.Fatal(err)
			}
		}
		var out contract.Output
		if err := cl.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
			t.Fatal(err)
		}
		if out.Termination.Reason != "completed" {
			t.Fatalf("%s ended %+v", c.name, out.Termination)
		}
		w.Stop()
		acts.Close()
		n := writeHistory(t, cl, id, filepath.Join(dir, "history.json"))
		x := execution{WorkflowID: id, RunID: cl.GetWorkflow(ctx, id, "").GetRunID()}
		if c.bestOf != "" {
			cid := id + ".c0"
			writeHistory(t, cl, cid, filepath.Join(dir, "candidate.json"))
			x.Candidate = &execution{WorkflowID: cid, RunID: cl.GetWorkflow(ctx, cid, "").GetRunID()}
		}
		if c.delegated {
			did := id + ".d1"
			writeHistory(t, cl, did, filepath.Join(dir, "delegation.json"))
			x.Delegation = &execution{WorkflowID: did, RunID: cl.GetWorkflow(ctx, did, "").GetRunID()}
		}
		xb, _ := json.MarshalIndent(x, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "execution.json"), append(xb, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d history events, %d iterations", c.name, n, out.Iterations)
	}
}

// writeHistory writes workflow id's history to path and returns how many
// events it holds.
func writeHistory(t *testing.T, cl client.Client, id, path string) int {
	t.Helper()
	h := &historypb.History{}
	it := cl.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(bytes.TrimSpace(b), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return len(h.Events)
}
