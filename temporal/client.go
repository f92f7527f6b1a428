package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// Connection is where the Temporal service is and how to reach it. Empty
// fields come from the environment the Temporal CLI reads: TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
// TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH,
// TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME and
// TEMPORAL_TLS_DISABLE_HOST_VERIFICATION.
type Connection struct {
	Address   string
	Namespace string
	LookupEnv func(string) (string, bool)
	// Log receives the SDK's warnings and errors; nil discards them.
	Log io.Writer
}

// Options are the client options of c.
func (c Connection) Options() (client.Options, error) {
	env := c.LookupEnv
	if env == nil {
		env = os.LookupEnv
	}
	get := func(k string) string { v, _ := env(k); return v }
	o := client.Options{HostPort: c.Address, Namespace: c.Namespace}
	if o.HostPort == "" {
		o.HostPort = get("TEMPORAL_ADDRESS")
	}
	if o.HostPort == "" {
		o.HostPort = client.DefaultHostPort
	}
	if o.Namespace == "" {
		o.Namespace = get("TEMPORAL_NAMESPACE")
	}
	if o.Namespace == "" {
		o.Namespace = client.DefaultNamespace
	}
	w := c.Log
	if w == nil {
		w = io.Discard
	}
	o.Logger = sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if key := get("TEMPORAL_API_KEY"); key != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	cert, key, ca := get("TEMPORAL_TLS_CLIENT_CERT_PATH"), get("TEMPORAL_TLS_CLIENT_KEY_PATH"), get("TEMPORAL_TLS_SERVER_CA_CERT_PATH")
	useTLS, _ := strconv.ParseBool(get("TEMPORAL_TLS"))
	if useTLS || cert != "" || ca != "" || get("TEMPORAL_API_KEY") != "" {
		t := &tls.Config{ServerName: get("TEMPORAL_TLS_SERVER_NAME")}
		t.InsecureSkipVerify, _ = strconv.ParseBool(get("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"))
		if cert != "" || key != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return o, fmt.Errorf("TEMPORAL_TLS_CLIENT_CERT_PATH / TEMPORAL_TLS_CLIENT_KEY_PATH: %w", err)
			}
			t.Certificates = []tls.Certificate{pair}
		}
		if ca != "" {
			b, err := os.ReadFile(ca)
			if err != nil {
				return o, fmt.Errorf("TEMPORAL_TLS_SERVER_CA_CERT_PATH: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(b) {
				return o, fmt.Errorf("TEMPORAL_TLS_SERVER_CA_CERT_PATH: %s holds no PEM certificate", ca)
			}
			t.RootCAs = pool
		}
		o.ConnectionOptions.TLS = t
	}
	return o, nil
}

// Dial connects to the service.
func (c Connection) Dial(ctx context.Context) (client.Client, error) {
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	cl, err := client.DialContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", o.HostPort, o.Namespace, err)
	}
	return cl, nil
}

// Client is what symbi does with runs on Temporal.
type Client struct {
	C client.Client
	// Poll is how often Follow asks for new events; 200ms when zero.
	Poll time.Duration
}

// NewRunID names a run as a local run is named (journal.NewRunID): the
// workflow's id.
func NewRunID(now time.Time, rand io.Reader) string { return journal.NewRunID(now, rand) }

// Start starts the workflow of one run on the task queue; its id is the
// run's id.
func (c *Client) Start(ctx context.Context, id, queue string, in contract.Start) error {
	if queue == "" {
		queue = contract.DefaultTaskQueue
	}
	_, err := c.C.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, contract.Workflow, in)
	return err
}

// Follow shows the run's events as they happen, through emit, until it
// ends, and returns how it ended. Events come from the events query;
// the text of a model call in flight comes from its activity's heartbeat,
// shown as content deltas before the call's own delta arrives (of which
// only the rest is then shown). Nothing of it is in the history.
func (c *Client) Follow(ctx context.Context, id string, emit func(engine.Event)) (contract.Output, error) {
	poll := c.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	type result struct {
		out contract.Output
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out contract.Output
		err := c.C.GetWorkflow(ctx, id, "").Get(ctx, &out)
		done <- result{out, err}
	}()
	f := follower{c: c, id: id, emit: emit}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case r := <-done:
			// The events of the end: the query is served by replaying the
			// closed workflow on a worker.
			f.drain(ctx, true)
			return r.out, r.err
		case <-ctx.Done():
			return contract.Output{}, ctx.Err()
		case <-t.C:
			f.drain(ctx, false)
		}
	}
}

type follower struct {
	c        *Client
	id       string
	emit     func(engine.Event)
	next     int
	last     engine.Event // the latest event shown, for the agent and iteration of a stream
	streamed string       // text of the model call in flight already shown
	own      window       // the run's delegation whose events are coming back
	// children are the run's child workflows (candidates, delegations,
	// theirs) whose events are shown as they happen, by id, in the order
	// they were found.
	children map[string]*child
	order    []string
}

// child is one child workflow being followed.
type child struct {
	id      string
	next    int
	handled int  // its events (deltas left out) shown or passed over
	done    bool // ended and drained, or its events came back in its parent's
	win     window
}

// window is a delegation whose events are coming back in its caller's
// events: those its own workflow already showed are passed over, the rest
// shown, so that each is shown once.
type window struct {
	id      string // the delegation's workflow, "" when none is open
	copying bool
	skip    int
}

func (f *follower) drain(ctx context.Context, final bool) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := f.c.C.QueryWorkflow(qctx, f.id, "", contract.EventsQuery, f.next)
	if err == nil {
		var evs Events
		if v.Get(&evs) == nil {
			for _, ev := range evs.Events {
				if ev.Type == engine.ContentDelta && ev.Depth == 0 && f.streamed != "" {
					rest, ok := strings.CutPrefix(ev.Delta, f.streamed)
					f.streamed = ""
					if ok {
						if rest == "" {
							continue
						}
						ev.Delta = rest
					}
				}
				if !engine.ShownOnly(ev.Type) {
					if f.passOver(&f.own, ev) {
						continue
					}
					f.last = ev
					f.streamed = ""
				}
				f.emit(ev)
			}
			f.next = evs.Next
		}
	}
	if final {
		return
	}
	d, err := f.c.C.DescribeWorkflowExecution(qctx, f.id, "")
	if err != nil {
		return
	}
	f.followChildren(qctx, d.GetPendingChildren())
	for _, pa := range d.GetPendingActivities() {
		if pa.GetActivityType().GetName() != contract.ModelActivity || pa.GetHeartbeatDetails() == nil {
			continue
		}
		var text string
		if converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &text) != nil {
			continue
		}
		if rest, ok := strings.CutPrefix(text, f.streamed); ok && rest != "" {
			f.streamed = text
			f.emit(engine.Event{Time: time.Now(), RunID: f.last.RunID, Agent: f.last.Agent, Iteration: f.last.Iteration, Type: engine.ContentDelta, Delta: rest})
		}
	}
}

// passOver keeps the window of the delegation ev starts or ends in the
// stream w belongs to, and reports whether ev is a delegation's event that
// its own workflow's events already showed.
func (f *follower) passOver(w *window, ev engine.Event) bool {
	switch ev.Type {
	case journal.DelegationStarted:
		var d journal.DelegationStartedData
		if json.Unmarshal(ev.Data, &d) == nil {
			*w = window{id: d.RunID}
			f.track(d.RunID)
		}
		return false
	case journal.CandidateStarted:
		// A candidate too short to be seen open is followed all the same.
		var d journal.CandidateStartedData
		if json.Unmarshal(ev.Data, &d) == nil {
			f.track(ev.RunID + ".c" + strconv.Itoa(d.Index))
		}
		return false
	case journal.DelegationFinished:
		// A delegation whose events did not come back (too many) is
		// followed until its workflow has been drained after its end.
		*w = window{}
		return false
	}
	if w.id == "" {
		return false
	}
	if !w.copying {
		// The delegation ended: what it showed is not shown again, and
		// its workflow is followed no further.
		w.copying = true
		if c := f.children[w.id]; c != nil {
			c.done, w.skip = true, c.handled
		}
	}
	if w.skip > 0 {
		w.skip--
		return true
	}
	return false
}

// track follows child workflow id from the next drain on.
func (f *follower) track(id string) {
	if id == "" || f.children[id] != nil {
		return
	}
	if f.children == nil {
		f.children = map[string]*child{}
	}
	f.children[id] = &child{id: id}
	f.order = append(f.order, id)
}

// followChildren shows the new events of the run's child workflows (and
// theirs), as a local run's observer sees its candidates' and delegations'
// events, their deltas left out as a local sub-run's are. open are the
// run's children still open; a child no longer open is drained once more.
func (f *follower) followChildren(ctx context.Context, open []*workflowpb.PendingChildExecutionInfo) {
	still := map[string]bool{}
	var find func(ids []string)
	find = func(ids []string) {
		for _, id := range ids {
			if still[id] {
				continue
			}
			still[id] = true
			f.track(id)
			if !f.children[id].done {
				find(f.c.openChildren(ctx, id))
			}
		}
	}
	ids := make([]string, 0, len(open))
	for _, ch := range open {
		ids = append(ids, ch.GetWorkflowId())
	}
	find(ids)
	for _, id := range f.order {
		c := f.children[id]
		if c.done {
			continue
		}
		if f.drainChild(ctx, c) && !still[id] {
			c.done = true // ended: drained for the last time
		}
	}
}

// drainChild shows c's new events and reports whether it could ask for
// them (a child not started yet cannot be asked).
func (f *follower) drainChild(ctx context.Context, c *child) bool {
	v, err := f.c.C.QueryWorkflow(ctx, c.id, "", contract.EventsQuery, c.next)
	if err != nil {
		return false
	}
	var evs Events
	if v.Get(&evs) != nil {
		return false
	}
	for _, ev := range evs.Events {
		if engine.ShownOnly(ev.Type) {
			continue
		}
		c.handled++
		if f.passOver(&c.win, ev) {
			continue
		}
		f.emit(ev)
	}
	c.next = evs.Next
	return true
}

// Cancel asks the run's workflow to cancel: the engine ends the run as
// cancelled, as Ctrl-C ends a local one.
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.C.CancelWorkflow(ctx, id, "")
}

// Events returns every event of a run (`symbi runs show`), as journal
// lines.
func (c *Client) Events(ctx context.Context, id string) ([]journal.Event, error) {
	v, err := c.C.QueryWorkflow(ctx, id, "", contract.EventsQuery, 0)
	if err != nil {
		return nil, err
	}
	var evs Events
	if err := v.Get(&evs); err != nil {
		return nil, err
	}
	var out []journal.Event
	for _, ev := range evs.Events {
		if engine.ShownOnly(ev.Type) {
			continue // never journalled, so not in runs show
		}
		out = append(out, journal.Event{Seq: ev.Seq, Time: ev.Time, RunID: ev.RunID, Agent: ev.Agent, Iteration: ev.Iteration, Type: ev.Type, Data: ev.Data})
	}
	return out, nil
}

// List returns the runs on the service, newest first, as `symbi runs`
// shows local ones: open runs are "running"; a closed run's status is its
// termination reason (from its result).
func (c *Client) List(ctx context.Context, limit int) ([]journal.RunSummary, error) {
	var out []journal.RunSummary
	var token []byte
	for {
		resp, err := c.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = %q", contract.Workflow), NextPageToken: token, PageSize: 100,
		})
		if err != nil {
			return nil, err
		}
		for _, x := range resp.GetExecutions() {
			s := journal.RunSummary{ID: x.GetExecution().GetWorkflowId(), Started: x.GetStartTime().AsTime(), Status: "running"}
			if x.GetCloseTime() != nil && x.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				s.Finished = x.GetCloseTime().AsTime()
				s.Status = strings.ToLower(strings.TrimPrefix(x.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_"))
				if x.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
					var o contract.Output
					if err := c.C.GetWorkflow(ctx, s.ID, x.GetExecution().GetRunId()).Get(ctx, &o); err == nil {
						s.Agent, s.Status, s.Limit, s.Iterations, s.Usage = o.Agent, o.Termination.Reason, o.Termination.Limit, o.Iterations, o.Usage
					}
				}
			}
			out = append(out, s)
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// Pending returns the approval requests run id waits on: its own, then
// those of its open child workflows (its candidates, its delegations, and
// theirs), whose ids name the child they wait in (RUN.dN~aM), so Decide
// sends the decision there.
func (c *Client) Pending(ctx context.Context, id string) ([]policy.Request, error) {
	v, err := c.C.QueryWorkflow(ctx, id, "", contract.PendingQuery)
	if err != nil {
		return nil, err
	}
	var out []policy.Request
	if err := v.Get(&out); err != nil {
		return nil, err
	}
	for _, child := range c.openChildren(ctx, id) {
		reqs, err := c.Pending(ctx, child)
		if err != nil {
			continue // a child that ended meanwhile
		}
		out = append(out, reqs...)
	}
	return out, nil
}

// openChildren are the ids of the child workflows of id still open, none
// when id cannot be described.
func (c *Client) openChildren(ctx context.Context, id string) []string {
	d, err := c.C.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil
	}
	var out []string
	for _, ch := range d.GetPendingChildren() {
		out = append(out, ch.GetWorkflowId())
	}
	return out
}

// PendingAll returns the approval requests of every open run.
func (c *Client) PendingAll(ctx context.Context) ([]policy.Request, error) {
	var out []policy.Request
	var token []byte
	for {
		resp, err := c.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = 'Running'", contract.Workflow), NextPageToken: token, PageSize: 100,
		})
		if err != nil {
			return nil, err
		}
		for _, x := range resp.GetExecutions() {
			reqs, err := c.Pending(ctx, x.GetExecution().GetWorkflowId())
			if err != nil {
				continue // a run that ended meanwhile
			}
			out = append(out, reqs...)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			return out, nil
		}
	}
}

// RunOfRequest is the run an approval request's id names.
func RunOfRequest(id string) (string, bool) {
	run, _, ok := strings.Cut(id, "~a")
	return run, ok && run != ""
}

// Decide sends a person's decision on request id: the binding is the one
// of the request the run holds (the pending query), so the run accepts it
// only while that request waits with those arguments.
func (c *Client) Decide(ctx context.Context, id string, approved bool, by, reason string) (policy.ApprovalRecord, policy.Binding, error) {
	run, ok := RunOfRequest(id)
	if !ok {
		return policy.ApprovalRecord{}, policy.Binding{}, fmt.Errorf("%w: %q names no run (a Temporal request id is RUN~aN)", ErrNoSuchRequest, id)
	}
	reqs, err := c.Pending(ctx, run)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return policy.ApprovalRecord{}, policy.Binding{}, fmt.Errorf("%w: no run %s", ErrNoSuchRequest, run)
		}
		return policy.ApprovalRecord{}, policy.Binding{}, err
	}
	for _, r := range reqs {
		if r.ID != id {
			continue
		}
		b := policy.BindingOf(r)
		h, err := c.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: run, UpdateName: contract.DecideUpdate, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{Decision{Binding: b, Approved: approved, By: by, Reason: reason}},
		})
		if err != nil {
			return policy.ApprovalRecord{}, b, err
		}
		var rec policy.ApprovalRecord
		return rec, b, h.Get(ctx, &rec)
	}
	return policy.ApprovalRecord{}, policy.Binding{}, fmt.Errorf("%w: %q (it was decided, timed out, or never asked)", ErrNoSuchRequest, id)
}

// IsNotFound reports whether err says the run does not exist.
func IsNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// FailureMessage is the message of a failed workflow's error, without the
// SDK's wrapping: the workflow's own refusal (a file mismatch, an unknown
// agent) as the worker said it.
func FailureMessage(err error) (msg, kind string) {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Message(), ae.Type()
	}
	return err.Error(), ""
}
