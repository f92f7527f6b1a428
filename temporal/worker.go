package temporal

import (
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// WorkerOptions configure a worker.
type WorkerOptions struct {
	// BaseDir is the configuration directory whose files the plans of the
	// runs reference; each is checked against the plan's digest.
	BaseDir string
	// TaskQueue; contract.DefaultTaskQueue when empty.
	TaskQueue string
	// Models replaces providers by model address (tests).
	Models map[string]provider.Model
	// EngineIdle is how long the worker keeps the engine of a plan no
	// activity is using, and the MCP server processes its runs started
	// (DefaultEngineIdle when zero); MaxEngines bounds the engines kept,
	// the one idle longest closed first (DefaultMaxEngines when zero).
	EngineIdle time.Duration
	MaxEngines int
}

// Register puts the workflow and the activities on r (a worker, a test
// environment, a replayer). The activities are returned for Close.
func Register(r worker.Registry, c client.Client, opts WorkerOptions) *Activities {
	wf := &Workflows{BaseDir: opts.BaseDir}
	r.RegisterWorkflowWithOptions(wf.Run, workflowOptions())
	r.RegisterWorkflowWithOptions(wf.Candidate, workflow.RegisterOptions{Name: contract.CandidateWorkflow})
	r.RegisterWorkflowWithOptions(wf.Delegation, workflow.RegisterOptions{Name: contract.DelegationWorkflow})
	acts := &Activities{BaseDir: opts.BaseDir, Client: c, Models: opts.Models, EngineIdle: opts.EngineIdle, MaxEngines: opts.MaxEngines}
	r.RegisterActivityWithOptions(acts.Model, activity.RegisterOptions{Name: contract.ModelActivity})
	r.RegisterActivityWithOptions(acts.Tool, activity.RegisterOptions{Name: contract.ToolActivity})
	r.RegisterActivityWithOptions(acts.Servers, activity.RegisterOptions{Name: contract.ServersActivity})
	r.RegisterActivityWithOptions(acts.Knowledge, activity.RegisterOptions{Name: contract.KnowledgeActivity})
	return acts
}

// NewWorker is a worker on the task queue. Heartbeats are sent at most
// every 200ms, so `symbi run --temporal` shows a streamed answer in
// pieces that small (a heartbeat is not history: none of it is kept).
func NewWorker(c client.Client, opts WorkerOptions) (worker.Worker, *Activities) {
	q := opts.TaskQueue
	if q == "" {
		q = contract.DefaultTaskQueue
	}
	w := worker.New(c, q, worker.Options{
		DefaultHeartbeatThrottleInterval: 200 * time.Millisecond,
		MaxHeartbeatThrottleInterval:     time.Second,
	})
	return w, Register(w, c, opts)
}

func workflowOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: contract.Workflow}
}
