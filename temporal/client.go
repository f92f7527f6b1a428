package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// Pending returns the approval requests run id waits on.
func (c *Client) Pending(ctx context.Context, id string) ([]policy.Request, error) {
	v, err := c.C.QueryWorkflow(ctx, id, "", contract.PendingQuery)
	if err != nil {
		return nil, err
	}
	var out []policy.Request
	return out, v.Get(&out)
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
