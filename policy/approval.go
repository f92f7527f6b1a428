package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/symbi-dev/symbi/seal"
)

// Request asks a person to decide one action.
//
// The approver that asks keeps the Request in memory and decides on it
// alone: what a request file in the queue says is for display, and a
// decision is accepted only when its proof binds it to this Request's run,
// ID, action and ArgumentsDigest (see Binding).
type Request struct {
	ID     string `json:"id"`
	RunID  string `json:"run_id,omitempty"`
	Agent  string `json:"agent"`
	Action Action `json:"action"` // in a request file: without arguments or text (see Arguments)
	// Arguments is what a person is shown of the action (DecidedArguments),
	// with the run's secrets redacted; ArgumentsDigest is the digest of the
	// exact, unredacted form. Prepared sets both from Action.
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	ArgumentsDigest string          `json:"arguments_digest,omitempty"`
	Reason          string          `json:"reason"`           // why a person is asked
	Policy          string          `json:"policy,omitempty"` // the policy that asked, if any
	Created         time.Time       `json:"created"`
	Expires         time.Time       `json:"expires"`
	// Timeout overrides the approver's own; zero keeps it.
	Timeout time.Duration `json:"-"`
	// Redact takes the run's secrets out of a JSON value a person is
	// shown (the arguments, the reason as a JSON string); nil shows them
	// as they are. The digest is always of the exact arguments.
	Redact func(json.RawMessage) json.RawMessage `json:"-"`
	// Rejected is told of every decision the queue found for this request
	// and refused (no proof, a bad one, or one bound to something else);
	// the approver goes on waiting. Nil: nobody is told.
	Rejected func(Rejection) `json:"-"`
}

// Prepared is the request as a person sees it and a decision is bound to
// it: Arguments and ArgumentsDigest computed from Action (whatever the
// caller put there), and Arguments and Reason redacted. Every approver
// prepares the request it is given before showing or submitting it.
func (r Request) Prepared() Request {
	args := DecidedArguments(r.Action)
	r.ArgumentsDigest = digestJSON(args)
	r.Arguments = args
	if r.Redact != nil {
		r.Arguments = r.Redact(args)
		if b, err := json.Marshal(r.Reason); err == nil {
			var s string
			if json.Unmarshal(r.Redact(b), &s) == nil {
				r.Reason = s
			}
		}
	}
	return r
}

// DecidedArguments is what a person decides about, as JSON: a tool call's
// arguments exactly as the tool gets them, a delegation's target and task
// (what the delegate tool gets), a respond's content, a terminate's reason.
func DecidedArguments(a Action) json.RawMessage {
	var v any
	switch a.Type {
	case ToolCall:
		if len(bytes.TrimSpace(a.Arguments)) == 0 {
			return json.RawMessage("{}")
		}
		return a.Arguments
	case Delegate:
		v = map[string]string{"target": a.Target, "task": a.Task}
	case Respond:
		v = map[string]string{"content": a.Content}
	case Terminate:
		v = map[string]string{"reason": a.Reason}
	default:
		v = map[string]any{}
	}
	b, err := marshalCanonical(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// ArgumentsDigest is the digest of the arguments a person decides about
// (DecidedArguments) in their canonical JSON (keys sorted, no spacing,
// numbers as written, no HTML escaping: builtins.CanonicalJSON's form):
// "sha256:" and 64 hex digits. Prompts, `symbi approve` and the journal
// show it, and every decision in the queue is bound to it.
func ArgumentsDigest(a Action) string { return digestJSON(DecidedArguments(a)) }

// digestJSON digests raw in canonical form; bytes that are not one JSON
// value are digested as they are.
func digestJSON(raw json.RawMessage) string {
	v, err := decodeJSON(raw)
	if err != nil {
		return seal.Digest(raw)
	}
	b, err := marshalCanonical(v)
	if err != nil {
		return seal.Digest(raw)
	}
	return seal.Digest(b)
}

// marshalCanonical is json.Marshal without HTML escaping: object keys
// sorted, no spacing, json.Number as written.
func marshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ApprovalRecord is a person's decision, for the journal: what, who, when.
type ApprovalRecord struct {
	ID       string    `json:"id"`
	Approved bool      `json:"approved"`
	By       string    `json:"by"`  // $USER, --by, or "timeout"
	At       time.Time `json:"at"`  // when the decision was made
	Via      string    `json:"via"` // terminal | queue | timeout | standing
	Reason   string    `json:"reason,omitempty"`
	// Arguments, on an approval, are the arguments the person approved
	// instead of the model's ("edit before approve"): the run checks them
	// against the tool's schema and puts them through the gate again.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Remember, on an approval, asks the run to remember it ("approve and
	// remember"): the run makes the standing rule (NewStanding of the
	// approved action, Widen and Until), and later calls it covers are
	// approved without asking.
	Remember *Remember `json:"remember,omitempty"`
}

// Remember is what a person confirmed to remember: the arguments to widen
// to a glob ("path=notes/*"; every other argument stays exact) and when it
// ends (zero: with the run).
type Remember struct {
	Widen []string  `json:"widen,omitempty"`
	Until time.Time `json:"until,omitempty"`
}

// TimeoutRecord is the record of a request nobody answered within (a
// positive limit; zero: its deadline, unnamed): a deny, by and via
// "timeout".
func TimeoutRecord(id string, within time.Duration, at time.Time) ApprovalRecord {
	reason := "nobody answered in time (a timeout is a deny)"
	if within > 0 {
		reason = fmt.Sprintf("nobody answered within %s (a timeout is a deny)", within)
	}
	return ApprovalRecord{ID: id, By: "timeout", Via: "timeout", At: at, Reason: reason}
}

// Approver asks a person. A timeout is not an error: it is a record with
// Approved false and Via "timeout". Errors are failures to ask (I/O, a
// cancelled context).
type Approver interface {
	Approve(ctx context.Context, req Request) (ApprovalRecord, error)
}

// ConcurrentApprover is an Approver that holds several requests open at
// once: each Approve puts its request before people as soon as it is
// called, however many others wait. The file queue is one (`symbi approve`
// lists every pending request); the engine then asks about all the
// actions of one model turn at once and takes each answer as it comes. An
// approver that is not (the terminal, which asks one question at a time)
// is asked in the order the model proposed the actions.
type ConcurrentApprover interface {
	Approver
	AsksConcurrently() bool
}

// DefaultApprovalTimeout applies when neither the request nor the approver
// sets one.
const DefaultApprovalTimeout = 10 * time.Minute

// Resolve asks a person about a verdict that needs one (Verdict.Ask) and, on
// approval, returns the Approved action, the only way besides Gate to get
// one. A denial or timeout returns an invalid Approved and the record. A
// deny verdict is final: Resolve refuses it with ErrNotAskable.
func (c *Chain) Resolve(ctx context.Context, v Verdict, ap Approver, req Request) (Approved, ApprovalRecord, error) {
	if !v.Ask || v.Decision.Outcome == Deny || v.Decision.Outcome == NotApplicable {
		return Approved{}, ApprovalRecord{}, fmt.Errorf("%w: decision is %s", ErrNotAskable, v.Decision.Outcome)
	}
	req.Action = v.Action
	if req.Reason == "" {
		req.Reason = v.Decision.Reason
		if v.Decision.Outcome != Ask {
			req.Reason = fmt.Sprintf("tool %q needs a person's approval (approval = \"always\")", v.Action.Tool)
		}
	}
	if req.Policy == "" && v.Decision.Outcome == Ask {
		req.Policy = v.Decision.Policy
	}
	rec, err := ap.Approve(ctx, req)
	if err != nil {
		return Approved{}, ApprovalRecord{}, err
	}
	if !rec.Approved || len(rec.Arguments) > 0 {
		// Edited arguments are not what the policies decided: the caller
		// checks them and gates them again (ApproveEdited).
		return Approved{}, rec, nil
	}
	d := rec.PersonDecision()
	d.Policy = req.Policy
	decisions := append(append([]Decision(nil), v.Decisions...), d)
	return approve(v.Action, decisions), rec, nil
}

// ApproveEdited turns a person's approval of edited arguments into an
// Approved, once the edited action has passed the gate again: v is the
// chain's verdict on the action with the person's arguments. A verdict
// that lets the action through is approved as it is; one that asks (a
// policy's ask, approval = "always") is approved by the person's answer,
// but only when the arguments it asks about are exactly the ones the
// person approved (a modify on the way may have changed them: ask again).
// A deny is final (ErrNotAskable).
func (c *Chain) ApproveEdited(v Verdict, rec ApprovalRecord) (Approved, error) {
	switch {
	case v.Approved.Valid():
		return v.Approved, nil
	case !v.Ask || v.Decision.Outcome == Deny || !rec.Approved:
		return Approved{}, fmt.Errorf("%w: decision is %s", ErrNotAskable, v.Decision.Outcome)
	case digestJSON(DecidedArguments(v.Action)) != digestJSON(rec.Arguments):
		return Approved{}, fmt.Errorf("the policies changed the approved arguments to %s: %w", DecidedArguments(v.Action), ErrNotAskable)
	}
	d := rec.PersonDecision()
	d.Policy = v.Decision.Policy
	return approve(v.Action, append(append([]Decision(nil), v.Decisions...), d)), nil
}

// ApproveStanding approves an action a verdict asks a person about, by a
// standing rule the person confirmed earlier in the run: only when the
// rule covers the action at now, and never a deny.
func (c *Chain) ApproveStanding(v Verdict, s Standing, rec ApprovalRecord, now time.Time) (Approved, error) {
	if !v.Ask || v.Decision.Outcome == Deny || v.Decision.Outcome == NotApplicable {
		return Approved{}, fmt.Errorf("%w: decision is %s", ErrNotAskable, v.Decision.Outcome)
	}
	if !s.Matches(v.Action, now) {
		return Approved{}, fmt.Errorf("%w: the remembered rule %s does not cover %s", ErrNotAskable, s, v.Action)
	}
	d := rec.PersonDecision()
	d.Policy = v.Decision.Policy
	return approve(v.Action, append(append([]Decision(nil), v.Decisions...), d)), nil
}

// PersonDecision is the record as a Decision, for the journal beside the
// policies' own.
func (r ApprovalRecord) PersonDecision() Decision {
	d := Decision{Outcome: Deny, Engine: "person", Reason: r.Reason}
	if r.Approved {
		d.Outcome = Allow
	}
	if d.Reason == "" {
		d.Reason = fmt.Sprintf("decided by %s via %s", r.By, r.Via)
	}
	return d
}

// marshalCanonicalRaw is one JSON value in canonical form.
func marshalCanonicalRaw(raw json.RawMessage) (json.RawMessage, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	return marshalCanonical(v)
}
