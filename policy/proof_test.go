package policy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/seal"
)

// rejections collects what an approver reports to Request.Rejected, and
// signals each one.
type rejections struct {
	mu   sync.Mutex
	got  []Rejection
	seen chan struct{}
}

func newRejections() *rejections { return &rejections{seen: make(chan struct{}, 16)} }

func (r *rejections) add(x Rejection) {
	r.mu.Lock()
	r.got = append(r.got, x)
	r.mu.Unlock()
	r.seen <- struct{}{}
}

func (r *rejections) last() Rejection {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

// waitRejected waits for the next rejection and returns it.
func (r *rejections) wait(t *testing.T) Rejection {
	t.Helper()
	select {
	case <-r.seen:
		return r.last()
	case <-time.After(30 * time.Second):
		t.Fatal("no decision was rejected")
		return Rejection{}
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, path, b)
}

// writeAtomic writes a file as a careful forger would, so the waiting
// approver never reads half of it.
func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A waiting run accepts only a decision that proves it came from Decide
// and is bound to its own request; every other decision file is discarded,
// reported, and the run goes on waiting until a person's real one comes.
func TestQueueRefusesDecisionsWithoutAValidProof(t *testing.T) {
	shell := toolCall("shell", `{"cmd":"ls"}`)
	other, err := seal.FromBytes([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		forge func(t *testing.T, q *Queue, req Request) // writes the bad decision
		why   error
		says  string
	}{
		{"no proof", func(t *testing.T, q *Queue, req Request) {
			writeJSON(t, q.decisionPath(req.ID), map[string]any{"approved": true, "by": "security-lead"})
		}, ErrNoProof, "no proof"},
		{"not JSON", func(t *testing.T, q *Queue, req Request) {
			writeAtomic(t, q.decisionPath(req.ID), []byte("yes please"))
		}, ErrUnreadable, "unreadable"},
		{"another key", func(t *testing.T, q *Queue, req Request) {
			writeJSON(t, q.decisionPath(req.ID), sign(other, BindingOf(req), ApprovalRecord{ID: req.ID, Approved: true, By: "mallory", At: time.Now(), Via: "queue"}))
		}, ErrBadProof, "bad proof"},
		{"edited after signing", func(t *testing.T, q *Queue, req Request) {
			key, _ := q.key()
			d := sign(key, BindingOf(req), ApprovalRecord{ID: req.ID, Approved: false, By: "alice", At: time.Now(), Via: "queue"})
			d.Approved = true
			writeJSON(t, q.decisionPath(req.ID), d)
		}, ErrBadProof, "bad proof"},
		{"another request", func(t *testing.T, q *Queue, req Request) {
			decoy := req
			decoy.ID = "decoy"
			if err := q.Submit(decoy); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Decide("decoy", true, "alice", ""); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(q.decisionPath("decoy"))
			writeAtomic(t, q.decisionPath(req.ID), b)
		}, ErrBoundElsewhere, `another request ("decoy")`},
		{"another run", func(t *testing.T, q *Queue, req Request) {
			key, _ := q.key()
			b := BindingOf(req)
			b.RunID = "other-run"
			writeJSON(t, q.decisionPath(req.ID), sign(key, b, ApprovalRecord{ID: req.ID, Approved: true, By: "alice", At: time.Now(), Via: "queue"}))
		}, ErrBoundElsewhere, "another run"},
		{"another tool", func(t *testing.T, q *Queue, req Request) {
			key, _ := q.key()
			b := BindingOf(req)
			b.Tool = "web_search"
			writeJSON(t, q.decisionPath(req.ID), sign(key, b, ApprovalRecord{ID: req.ID, Approved: true, By: "alice", At: time.Now(), Via: "queue"}))
		}, ErrBoundElsewhere, "another action"},
		{"other arguments", func(t *testing.T, q *Queue, req Request) {
			// Whoever edits the request file gets a person's approval
			// bound to what the file says, not to what the run asked.
			edited := req
			edited.ArgumentsDigest = ArgumentsDigest(toolCall("shell", `{"cmd":"rm -rf /"}`))
			if err := q.Submit(edited); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Decide(req.ID, true, "alice", ""); err != nil {
				t.Fatal(err)
			}
		}, ErrBoundElsewhere, "other arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, q := newQueueApprover(t, nil)
			rejected := newRejections()
			done := approveAsync(context.Background(), a, Request{RunID: "run-1", Agent: "researcher", Action: shell, Rejected: rejected.add})
			req := waitPending(t, q)
			// What the waiting run holds is its own: the listing's digest.
			if req.ArgumentsDigest != ArgumentsDigest(shell) || req.RunID != "run-1" {
				t.Fatalf("pending request %+v", req)
			}
			tc.forge(t, q, req)
			rej := rejected.wait(t)
			if !errors.Is(rej.Err, tc.why) || !strings.Contains(rej.Err.Error(), tc.says) || rej.RequestID != "req1" {
				t.Errorf("rejection %+v (%v), want %v mentioning %q", rej, rej.Err, tc.why, tc.says)
			}
			// The run still waits, with its own request back in the queue.
			select {
			case res := <-done:
				t.Fatalf("the approver returned after a refused decision: %+v", res)
			default:
			}
			for {
				back, err := q.Request("req1")
				if err == nil && back.ArgumentsDigest == ArgumentsDigest(shell) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			// A person's decision still gets through.
			for {
				_, err := q.Decide("req1", true, "bob", "looked")
				if err == nil {
					break
				}
				if errors.Is(err, ErrAlreadyDecided) {
					t.Fatal(err)
				}
				time.Sleep(time.Millisecond) // the refused file is still in the way
			}
			res := <-done
			if res.err != nil || !res.rec.Approved || res.rec.By != "bob" || res.rec.Via != "queue" {
				t.Errorf("after the refusal: %+v %v", res.rec, res.err)
			}
		})
	}
}

// A decision is signed over everything it says and is bound to: changing
// any one field breaks the proof.
func TestProofCoversEveryField(t *testing.T) {
	key, err := seal.FromBytes(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{RunID: "r", RequestID: "q", Action: ToolCall, Tool: "shell", ArgumentsDigest: "sha256:00"}
	rec := ApprovalRecord{ID: "q", Approved: true, By: "alice", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Via: "queue", Reason: "ok",
		Arguments: json.RawMessage(`{"path":"notes/a.txt"}`), Remember: &Remember{Widen: []string{"path=notes/*"}}}
	d := sign(key, b, rec)
	if err := d.check(key, b); err != nil {
		t.Fatalf("own decision refused: %v", err)
	}
	// Read back from its file, it still verifies.
	raw, _ := json.Marshal(d)
	var back signedDecision
	if err := json.Unmarshal(raw, &back); err != nil || back.check(key, b) != nil {
		t.Fatalf("decision read back: %v %v", err, back.check(key, b))
	}
	for name, edit := range map[string]func(*signedDecision){
		"approved": func(d *signedDecision) { d.Approved = false },
		"by":       func(d *signedDecision) { d.By = "mallory" },
		"at":       func(d *signedDecision) { d.At = d.At.Add(time.Nanosecond) },
		"via":      func(d *signedDecision) { d.Via = "terminal" },
		"reason":   func(d *signedDecision) { d.Reason = "" },
		"run":      func(d *signedDecision) { d.Binding.RunID = "r2" },
		"request":  func(d *signedDecision) { d.Binding.RequestID = "q2" },
		"action":   func(d *signedDecision) { d.Binding.Action = Delegate },
		"tool":     func(d *signedDecision) { d.Binding.Tool = "sh" },
		"target":   func(d *signedDecision) { d.Binding.Target = "x" },
		"digest":   func(d *signedDecision) { d.Binding.ArgumentsDigest = "sha256:01" },
		// Issue 17: the person's edited arguments and the rule to remember.
		"arguments":      func(d *signedDecision) { d.Arguments = json.RawMessage(`{"path":"evil.txt"}`) },
		"arguments gone": func(d *signedDecision) { d.Arguments = nil },
		"remember":       func(d *signedDecision) { d.Remember = &Remember{Widen: []string{"path=*"}} },
		"remember gone":  func(d *signedDecision) { d.Remember = nil },
	} {
		e := d
		edit(&e)
		if err := e.check(key, e.Binding); !errors.Is(err, ErrBadProof) {
			t.Errorf("%s edited: %v, want ErrBadProof", name, err)
		}
	}
}

// Decide refuses to write over a decision: a valid one is "already
// decided"; one without a valid proof is named as such, and the waiting
// run's next look clears it.
func TestDecideNamesAForgedDecisionInTheWay(t *testing.T) {
	q := NewQueue(t.TempDir())
	req := Request{ID: "r1", RunID: "run", Agent: "a", Action: toolCall("shell", `{}`)}.Prepared()
	if err := q.Submit(req); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, q.decisionPath("r1"), map[string]any{"approved": true, "by": "security-lead"})
	_, err := q.Decide("r1", true, "alice", "")
	if err == nil || errors.Is(err, ErrAlreadyDecided) || !strings.Contains(err.Error(), "without a valid proof") {
		t.Errorf("deciding over a forged decision: %v", err)
	}
	os.Remove(q.decisionPath("r1"))
	if _, err := q.Decide("r1", true, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Decide("r1", false, "bob", ""); !errors.Is(err, ErrAlreadyDecided) {
		t.Errorf("second decision: %v, want ErrAlreadyDecided", err)
	}
}

// The request file holds what a person may see: the arguments redacted,
// the digest of the exact ones, and no copy of them in the action.
func TestSubmittedRequestHoldsRedactedArguments(t *testing.T) {
	const secret = "tok-SECRET-1234"
	a, q := newQueueApprover(t, nil)
	redact := func(b json.RawMessage) json.RawMessage {
		return json.RawMessage(strings.ReplaceAll(string(b), secret, "[redacted]"))
	}
	action := toolCall("http", `{"url":"https://x.example/?token=`+secret+`"}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := approveAsync(ctx, a, Request{Agent: "a", Action: action, Reason: "sends " + secret, Redact: redact})
	waitPending(t, q)
	raw, err := os.ReadFile(filepath.Join(q.Dir, "req1.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if strings.Contains(string(raw), secret) {
		t.Errorf("the request file holds the secret:\n%s", raw)
	}
	var got Request
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.ArgumentsDigest != ArgumentsDigest(action) || !strings.Contains(string(got.Arguments), "[redacted]") ||
		got.Reason != "sends [redacted]" || got.Action.Arguments != nil || got.Action.Tool != "http" {
		t.Errorf("request file:\n%s", raw)
	}
}

func TestArgumentsDigest(t *testing.T) {
	// The canonical form: key order, spacing and HTML escaping do not
	// change the digest; a value does.
	same := []string{`{"b":1,"a":"<x>"}`, "{ \"a\" : \"\\u003cx>\",\n\"b\":1}"}
	if ArgumentsDigest(toolCall("t", same[0])) != ArgumentsDigest(toolCall("t", same[1])) {
		t.Error("equal arguments, different digests")
	}
	if ArgumentsDigest(toolCall("t", `{"a":"<x>","b":1}`)) != seal.Digest([]byte(`{"a":"<x>","b":1}`)) {
		t.Error("the digest is not of the canonical JSON")
	}
	if ArgumentsDigest(toolCall("t", `{"b":2,"a":"<x>"}`)) == ArgumentsDigest(toolCall("t", same[0])) {
		t.Error("different arguments, one digest")
	}
	// A delegation is decided on what the delegate tool gets.
	d := Action{Type: Delegate, Target: "critic", Task: "review", Arguments: json.RawMessage(`{"target":"critic","task":"x","TASK":"review"}`)}
	if got := string(DecidedArguments(d)); got != `{"target":"critic","task":"review"}` {
		t.Errorf("delegation decided on %s", got)
	}
	if ArgumentsDigest(toolCall("t", "")) != seal.Digest([]byte("{}")) {
		t.Error("no arguments are not {}")
	}
}
