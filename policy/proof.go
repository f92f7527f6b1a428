package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/symbi-dev/symbi/seal"
)

// decisionDomain is the seal domain of approval decisions: a MAC made for a
// journal line (or anything else) never verifies as a decision.
const decisionDomain = "symbi/approval-decision/v1"

// Why a decision found in the queue was refused, for errors.Is.
var (
	// ErrNoProof: the decision carries no proof, so nothing says symbi
	// wrote it (an agent, a tool or a hand wrote the file).
	ErrNoProof = errors.New("no proof")
	// ErrBadProof: the proof does not verify under the state key: the
	// decision was forged, or edited after symbi signed it.
	ErrBadProof = errors.New("bad proof")
	// ErrBoundElsewhere: a valid proof, for another run, request, action
	// or arguments than the request waiting (a decision copied across).
	ErrBoundElsewhere = errors.New("bound to")
	// ErrUnreadable: the decision file is not a decision.
	ErrUnreadable = errors.New("unreadable decision")
)

// Binding is what a decision is about: one request of one run, one action
// (type, tool or target) and its exact arguments, by digest. symbi approve
// and symbi deny take it from the request file; the waiting run compares it
// with its own Request, never with the file.
type Binding struct {
	RunID           string     `json:"run_id"`
	RequestID       string     `json:"request_id"`
	Action          ActionType `json:"action"`
	Tool            string     `json:"tool,omitempty"`
	Target          string     `json:"target,omitempty"`
	ArgumentsDigest string     `json:"arguments_digest"`
}

// BindingOf is the binding of a request: its run, ID, action and digest.
// The request's ArgumentsDigest is used as it is (Prepared computes it).
func BindingOf(req Request) Binding {
	return Binding{
		RunID:           req.RunID,
		RequestID:       req.ID,
		Action:          req.Action.Type,
		Tool:            req.Action.Tool,
		Target:          req.Action.Target,
		ArgumentsDigest: req.ArgumentsDigest,
	}
}

// signedDecision is a <id>.decision.json file: the record, what it is bound
// to, and the proof, an HMAC under the state key over both.
type signedDecision struct {
	ApprovalRecord
	Binding Binding `json:"binding"`
	Proof   string  `json:"proof,omitempty"`
}

// proofMessage is what the proof signs: every field of the binding and of
// the decision (approved, by, at, via, reason), in one fixed encoding.
func proofMessage(b Binding, rec ApprovalRecord) []byte {
	// The edited arguments (their canonical JSON) and the standing rule
	// are signed too; a decision without them signs what it always did.
	args := ""
	if len(rec.Arguments) > 0 {
		c, err := marshalCanonicalRaw(rec.Arguments)
		if err != nil {
			c = rec.Arguments // not JSON: signed as it is, and refused when checked
		}
		args = string(c)
	}
	remember := ""
	if rec.Remember != nil {
		b, _ := json.Marshal(rec.Remember) // strings and a time always encode
		remember = string(b)
	}
	msg, err := json.Marshal(struct {
		Binding   Binding `json:"binding"`
		Approved  bool    `json:"approved"`
		By        string  `json:"by"`
		At        string  `json:"at"`
		Via       string  `json:"via"`
		Reason    string  `json:"reason"`
		Arguments string  `json:"arguments,omitempty"`
		Remember  string  `json:"remember,omitempty"`
	}{b, rec.Approved, rec.By, rec.At.UTC().Format(time.RFC3339Nano), rec.Via, rec.Reason, args, remember})
	if err != nil {
		panic(fmt.Sprintf("policy: encoding a proof message: %v", err)) // strings and a bool always encode
	}
	return msg
}

// sign makes the decision file of rec about b.
func sign(key seal.Key, b Binding, rec ApprovalRecord) signedDecision {
	rec.At = rec.At.UTC()
	return signedDecision{ApprovalRecord: rec, Binding: b, Proof: key.Sign(decisionDomain, proofMessage(b, rec))}
}

// check reports whether d proves itself (a proof that verifies over its own
// binding and record) and is bound to want. The error wraps ErrNoProof,
// ErrBadProof or ErrBoundElsewhere.
func (d signedDecision) check(key seal.Key, want Binding) error {
	if d.Proof == "" {
		return ErrNoProof
	}
	if !key.Verify(decisionDomain, proofMessage(d.Binding, d.ApprovalRecord), d.Proof) {
		return ErrBadProof
	}
	got := d.Binding
	switch {
	case got.RunID != want.RunID:
		return fmt.Errorf("%w another run (%q)", ErrBoundElsewhere, got.RunID)
	case got.RequestID != want.RequestID:
		return fmt.Errorf("%w another request (%q)", ErrBoundElsewhere, got.RequestID)
	case got.Action != want.Action || got.Tool != want.Tool || got.Target != want.Target:
		return fmt.Errorf("%w another action", ErrBoundElsewhere)
	case got.ArgumentsDigest != want.ArgumentsDigest:
		return fmt.Errorf("%w other arguments (%s)", ErrBoundElsewhere, got.ArgumentsDigest)
	}
	return nil
}

// valid reports whether d's proof verifies, whatever it is bound to.
func (d signedDecision) valid(key seal.Key) bool {
	return d.Proof != "" && key.Verify(decisionDomain, proofMessage(d.Binding, d.ApprovalRecord), d.Proof)
}

// Rejection is a decision the queue held for a request and the waiting
// approver refused. Claimed is what the decision said (who, approved):
// untrusted text, for the journal.
type Rejection struct {
	RequestID string
	Claimed   ApprovalRecord
	Err       error // wraps ErrNoProof, ErrBadProof, ErrBoundElsewhere or ErrUnreadable
}
