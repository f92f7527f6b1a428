package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// Error types of the workflow's own failures (temporal.ApplicationError).
const (
	// ErrFileMismatch: the worker's files differ from the plan's digests.
	ErrFileMismatch = "file_mismatch"
	// ErrUnsupported: the plan uses what this runtime does not run yet.
	ErrUnsupported = "unsupported"
	// ErrCannotStart: the engine could not start the run (an unknown
	// agent, a plan that does not decode).
	ErrCannotStart = "cannot_start"
)

// versionLoop guards the order of the loop's commands: a change to it
// takes a new version under this change id (workflow.GetVersion), and old
// histories keep replaying the branch they were recorded with.
const versionLoop = "symbi-loop"

// The versions of versionLoop. A candidate's workflow asked for none
// before versionChildDelegations: its histories replay as DefaultVersion.
const (
	// versionFirst: delegations run in the workflow of the run that
	// makes them, as coroutines.
	versionFirst = 1
	// versionChildDelegations: each delegation is a child workflow,
	// symbi.delegation, RUN.dN.
	versionChildDelegations = 2
	versionLatest           = versionChildDelegations
)

// Workflows holds what the workflow code needs from its worker: where the
// plan's files are. Nothing here changes during a run.
type Workflows struct {
	// BaseDir is the configuration directory on this worker: the plan's
	// files are read (and their digests checked) relative to it.
	BaseDir string
}

// state is one workflow execution's state besides the engine's: the events
// the query serves, the approval requests waiting, and the decisions the
// DecideUpdate delivered.
type state struct {
	plan    []byte
	scripts []plan.FileRef
	events  []engine.Event
	seq     int64
	pending map[string]policy.Request
	order   []string // pending ids, in the order asked
	decided map[string]policy.ApprovalRecord
	asked   int
}

// Run is the workflow of one run: it checks the plan and the worker's
// files, then runs the engine's loop with the workflow as its runtime.
func (wf *Workflows) Run(w workflow.Context, in contract.Start) (contract.Output, error) {
	st := &state{plan: in.Plan, scripts: in.Scripts, pending: map[string]policy.Request{}, decided: map[string]policy.ApprovalRecord{}}
	if err := st.handlers(w); err != nil {
		return contract.Output{}, err
	}
	e, rt, err := wf.engine(w, st, in)
	if err != nil {
		return contract.Output{}, err
	}
	defer e.Close()
	ro := engine.RunOptions{RunID: workflow.GetInfo(w).WorkflowExecution.ID, NoJournal: true}
	var res *engine.Result
	if in.BestOfN != "" {
		res, err = e.RunBestOfN(rt.ctx, in.BestOfN, in.Input, ro)
	} else {
		res, err = e.Run(rt.ctx, in.Agent, in.Input, ro)
	}
	if err != nil {
		return contract.Output{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrCannotStart, nil)
	}
	return contract.OutputOf(res), nil
}

// CandidateStart is the input of a best-of-N candidate's child workflow:
// the run's plan (a worker that has not seen it builds its engine from
// it) and the candidate as the parent reserved it.
type CandidateStart struct {
	Plan          []byte              `json:"plan"`
	PlanDigest    string              `json:"plan_digest"`
	PolicyContext map[string]any      `json:"policy_context,omitempty"`
	Run           engine.CandidateRun `json:"run"`
	// Scripts and ScriptsDigest are the run's (contract.Start).
	Scripts       []plan.FileRef `json:"scripts,omitempty"`
	ScriptsDigest string         `json:"scripts_digest,omitempty"`
}

// Candidate is the child workflow of one best-of-N candidate: the same
// checks as Run, then the candidate's generation under its allowance,
// returning its outcome for the parent to settle. Its events stay in its
// own events query, as a local candidate's stay out of the run's journal.
func (wf *Workflows) Candidate(w workflow.Context, in CandidateStart) (engine.CandidateOutcome, error) {
	st := &state{plan: in.Plan, scripts: in.Scripts, pending: map[string]policy.Request{}, decided: map[string]policy.ApprovalRecord{}}
	if err := st.handlers(w); err != nil {
		return engine.CandidateOutcome{}, err
	}
	e, rt, err := wf.engine(w, st, contract.Start{Plan: in.Plan, PlanDigest: in.PlanDigest, PolicyContext: in.PolicyContext, Scripts: in.Scripts, ScriptsDigest: in.ScriptsDigest})
	if err != nil {
		return engine.CandidateOutcome{}, err
	}
	defer e.Close()
	out, err := e.RunCandidate(rt.ctx, in.Run)
	if err != nil {
		return engine.CandidateOutcome{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrCannotStart, nil)
	}
	return out, nil
}

// DelegationStart is the input of a delegation's child workflow: the
// run's plan and the delegation as the parent reserved it.
type DelegationStart struct {
	Plan          []byte               `json:"plan"`
	PlanDigest    string               `json:"plan_digest"`
	PolicyContext map[string]any       `json:"policy_context,omitempty"`
	Run           engine.DelegationRun `json:"run"`
	// Scripts and ScriptsDigest are the run's (contract.Start).
	Scripts       []plan.FileRef `json:"scripts,omitempty"`
	ScriptsDigest string         `json:"scripts_digest,omitempty"`
}

// DelegationEnd is what a delegation's child workflow returns: its
// outcome, which the parent settles, and its events without the deltas,
// which the parent's events take in where a local run's observer sees them
// (between delegation_started and delegation_finished), so that the run's
// timeline is a local run's.
type DelegationEnd struct {
	Outcome engine.DelegationOutcome `json:"outcome"`
	Events  []engine.Event           `json:"events,omitempty"`
	// Omitted counts the events left out because together they were
	// larger than maxDelegationEvents; they stay in the child's own events.
	Omitted int `json:"omitted,omitempty"`
}

// maxDelegationEvents bounds the events a delegation's result carries (a
// result is one payload in the parent's history, which Temporal refuses
// past 2 MB): a longer delegation's events stay in its own workflow.
const maxDelegationEvents = 512 << 10

// Delegation is the child workflow of one delegation: the same checks as
// Run, then the delegated agent's run under its share of the parent's
// budget. Its events are its own events query's too (`symbi runs show
// --temporal RUN.dN`), and an approval it asks for waits in it.
func (wf *Workflows) Delegation(w workflow.Context, in DelegationStart) (DelegationEnd, error) {
	st := &state{plan: in.Plan, scripts: in.Scripts, pending: map[string]policy.Request{}, decided: map[string]policy.ApprovalRecord{}}
	if err := st.handlers(w); err != nil {
		return DelegationEnd{}, err
	}
	e, rt, err := wf.engine(w, st, contract.Start{Plan: in.Plan, PlanDigest: in.PlanDigest, PolicyContext: in.PolicyContext, Scripts: in.Scripts, ScriptsDigest: in.ScriptsDigest})
	if err != nil {
		return DelegationEnd{}, err
	}
	defer e.Close()
	out, err := e.RunDelegation(rt.ctx, in.Run)
	if err != nil {
		return DelegationEnd{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrCannotStart, nil)
	}
	end := DelegationEnd{Outcome: out}
	size := 0
	for _, ev := range st.events {
		if engine.ShownOnly(ev.Type) {
			continue
		}
		end.Events = append(end.Events, ev)
		size += len(ev.Data) + 256 // the event's other fields, generously
	}
	if size > maxDelegationEvents {
		end.Events, end.Omitted = nil, len(end.Events)
	}
	return end, nil
}

// engine checks the plan of in and the worker's files, and builds the
// engine that runs it with the workflow as its runtime.
func (wf *Workflows) engine(w workflow.Context, st *state, in contract.Start) (*engine.Engine, *runtime, error) {
	// First, before any command: the versions say which commands follow.
	version := workflow.GetVersion(w, versionLoop, workflow.DefaultVersion, versionLatest)
	p, err := in.Decode()
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrCannotStart, nil)
	}
	if err := supported(p); err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrUnsupported, nil)
	}
	if err := in.Verify(p, wf.BaseDir); err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrFileMismatch, err)
	}
	if err := replayable(p, wf.BaseDir); err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrUnsupported, nil)
	}
	rt := newRuntime(w)
	ert := &engine.Runtime{
		Execute:     (&toolRunner{rt: rt, digest: in.PlanDigest, scripts: in.ScriptsDigest}).execute,
		Go:          rt.goAll,
		WithTimeout: rt.withTimeout,
		WithCancel:  rt.withCancel,
		ListServers: (&serverLister{rt: rt, plan: p, digest: in.PlanDigest, scripts: in.ScriptsDigest}).list,
		Knowledge:   knowledgeOn(rt, in.PlanDigest, in.ScriptsDigest),
		Candidate:   (&candidates{plan: in.Plan, digest: in.PlanDigest, policyContext: in.PolicyContext, scripts: in.Scripts, scriptsDigest: in.ScriptsDigest}).run,
	}
	if version >= versionChildDelegations {
		ert.Delegate = (&delegations{plan: in.Plan, digest: in.PlanDigest, policyContext: in.PolicyContext, scripts: in.Scripts, scriptsDigest: in.ScriptsDigest, st: st}).run
	}
	e, err := engine.New(p, engine.Options{
		BaseDir:       wf.BaseDir,
		StateDir:      engine.DefaultStateDir(p, wf.BaseDir),
		LookupEnv:     func(string) (string, bool) { return "", false },
		OnEvent:       st.record,
		Approver:      &approver{st: st, rt: rt},
		Models:        activityModels(p, rt, in.PlanDigest, in.ScriptsDigest),
		PolicyContext: in.PolicyContext,
		Now:           func() time.Time { return workflow.Now(w) },
		Rand:          seeded(w),
		Sleep:         rt.sleep,
		Runtime:       ert,
	})
	if err != nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrCannotStart, nil)
	}
	return e, rt, nil
}

// candidates is engine.Runtime.Candidate: each candidate a child workflow
// on the run's task queue, id RUN.cN, so that candidates spread over the
// workers. A cancellation (the block's deadline, a stop) reaches the child,
// and the parent waits for it to end, so that what it used is settled.
type candidates struct {
	plan          []byte
	digest        string
	policyContext map[string]any
	scripts       []plan.FileRef
	scriptsDigest string
}

func (c *candidates) run(ctx context.Context, cr engine.CandidateRun) (engine.CandidateOutcome, error) {
	w := workflow.WithChildOptions(workflowOf(ctx), workflow.ChildWorkflowOptions{
		WorkflowID:          cr.RunID,
		WaitForCancellation: true,
		ParentClosePolicy:   enums.PARENT_CLOSE_POLICY_TERMINATE,
	})
	var out engine.CandidateOutcome
	err := workflow.ExecuteChildWorkflow(w, contract.CandidateWorkflow, CandidateStart{
		Plan: c.plan, PlanDigest: c.digest, PolicyContext: c.policyContext, Run: cr,
		Scripts: c.scripts, ScriptsDigest: c.scriptsDigest,
	}).Get(w, &out)
	if err != nil {
		return engine.CandidateOutcome{}, fmt.Errorf("candidate %d (workflow %s): %w", cr.Index, cr.RunID, err)
	}
	return out, nil
}

// delegations is engine.Runtime.Delegate: each delegation a child workflow
// on the run's task queue, id RUN.dN, so that delegated agents spread over
// the workers. A cancellation of the run reaches the child, and the parent
// waits for it to end, so that what it used is settled; its events join
// the parent's at its end.
type delegations struct {
	plan          []byte
	digest        string
	policyContext map[string]any
	scripts       []plan.FileRef
	scriptsDigest string
	st            *state
}

func (d *delegations) run(ctx context.Context, dr engine.DelegationRun) (engine.DelegationOutcome, error) {
	w := workflow.WithChildOptions(workflowOf(ctx), workflow.ChildWorkflowOptions{
		WorkflowID:          dr.RunID,
		WaitForCancellation: true,
		ParentClosePolicy:   enums.PARENT_CLOSE_POLICY_TERMINATE,
	})
	var end DelegationEnd
	err := workflow.ExecuteChildWorkflow(w, contract.DelegationWorkflow, DelegationStart{
		Plan: d.plan, PlanDigest: d.digest, PolicyContext: d.policyContext, Run: dr,
		Scripts: d.scripts, ScriptsDigest: d.scriptsDigest,
	}).Get(w, &end)
	if err != nil {
		return engine.DelegationOutcome{}, fmt.Errorf("workflow %s: %w", dr.RunID, err)
	}
	for _, ev := range end.Events {
		d.st.record(ev)
	}
	return end.Outcome, nil
}

// supported refuses what the workflow cannot run yet. Nothing at the
// moment: MCP servers run on the workers (serverLister), knowledge stores
// are read there (knowledgeOn).
func supported(p *plan.Plan) error {
	return nil
}

// replayable refuses OPA policies that call a built-in whose result may
// differ from one evaluation to the next (time.now_ns, http.send, …): the
// gate decides in workflow code, and a replay must take the decisions the
// run took. A policy that does not load is left to engine.New to report.
func replayable(p *plan.Plan, baseDir string) error {
	var out []error
	for _, pol := range p.Policies {
		if pol.OPA == nil {
			continue
		}
		o, err := policy.PrepareOPA(context.Background(), pol.Address, *pol.OPA, baseDir)
		if err != nil {
			continue
		}
		if names, err := o.Impure(context.Background()); err != nil {
			out = append(out, fmt.Errorf("%s: %v", pol.Address, err))
		} else if len(names) > 0 {
			out = append(out, fmt.Errorf("%s calls %s, whose result may differ from one evaluation to the next: on Temporal the gate decides in the workflow, whose replay must take the same decisions (docs/temporal.md); give the policy what it needs in its input or data instead", pol.Address, strings.Join(names, ", ")))
		}
	}
	return errors.Join(out...)
}

// record is engine.Options.OnEvent: the event, numbered like a journal
// line (what is shown only, the deltas, is not numbered), kept for the
// events query. Nothing of it goes into the workflow's history.
func (st *state) record(ev engine.Event) {
	if !engine.ShownOnly(ev.Type) {
		st.seq++
		ev.Seq = st.seq
	}
	st.events = append(st.events, ev)
}

// Events is the events query's answer: the events from index From on, and
// the index to ask from next.
type Events struct {
	Events []engine.Event `json:"events"`
	Next   int            `json:"next"`
}

func (st *state) handlers(w workflow.Context) error {
	if err := workflow.SetQueryHandler(w, contract.EventsQuery, func(from int) (Events, error) {
		if from < 0 || from > len(st.events) {
			from = len(st.events)
		}
		return Events{Events: st.events[from:], Next: len(st.events)}, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(w, contract.PendingQuery, func() ([]policy.Request, error) {
		out := make([]policy.Request, 0, len(st.order))
		for _, id := range st.order {
			out = append(out, st.pending[id])
		}
		return out, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(w, contract.PlanQuery, func() ([]byte, error) { return st.plan, nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(w, contract.ScriptsQuery, func() ([]plan.FileRef, error) { return st.scripts, nil }); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(w, contract.DecideUpdate,
		func(w workflow.Context, d Decision) (policy.ApprovalRecord, error) {
			rec := d.record(workflow.Now(w))
			st.decided[d.Binding.RequestID] = rec
			return rec, nil
		},
		workflow.UpdateHandlerOptions{Validator: st.validate})
}
