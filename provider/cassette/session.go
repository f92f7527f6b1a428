package cassette

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/symbi-dev/symbi/provider"
)

// Mode is what a Session does with a run's model calls.
type Mode int

const (
	// Replay answers every call from the cassette and calls no model. A
	// request that matches no recorded exchange fails with a
	// *MismatchError.
	Replay Mode = iota
	// Record calls the live models and records every exchange.
	Record
	// Update replays what matches and calls the live model for a request
	// that does not, recording the new exchange in place of the one it
	// replaces: `symbi test -update`, `symbi run --replay
	// --record-missing`. An exported exchange without a request gets the
	// request it met, and no model is called for it.
	Update
)

// Options configure a Session.
type Options struct {
	Mode Mode
	// Name names the cassette in errors: its path.
	Name string
	// Chunks keeps the streamed pieces of new exchanges, with their timing.
	Chunks bool
	// Now is the clock of chunk timing; time.Now when nil.
	Now func() time.Time
}

// Session is one run's use of a cassette; engine.Options.Cassette takes
// it. It is safe for concurrent calls (best-of-N candidates, delegations,
// parallel plan steps): a call gets the first exchange, in cassette order,
// that is not used yet, is of its model and matches its request.
type Session struct {
	opts  Options
	match Match

	mu       sync.Mutex
	recorded []Exchange
	digests  []string // of recorded, "" for an exchange without a request
	played   []bool
	replaced map[int]Exchange // Update: a recorded exchange's successor
	extra    []Exchange       // exchanges recorded without one to replace, in order
	pinned   bool             // Update gave an exchange its request
	// liveFailed: in Update mode, a live call failed (or its model could
	// not be built). Nothing is then dropped: a run cut short by a failure
	// did not show which exchanges are stale.
	liveFailed bool
	mismatches []*MismatchError
	calls      map[string]int // calls per model, for messages
}

// NewSession starts a run's use of c; c itself is not changed (Cassette
// returns the result). In Record mode c may be nil: the recording starts
// empty, with the default matching rules.
func NewSession(c *Cassette, opts Options) *Session {
	if c == nil {
		c = New()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Session{opts: opts, match: c.Match, replaced: map[int]Exchange{}, calls: map[string]int{}}
	if opts.Mode != Record {
		s.recorded = c.Exchanges
	}
	s.played = make([]bool, len(s.recorded))
	s.digests = make([]string, len(s.recorded))
	for i, x := range s.recorded {
		if x.Request != nil {
			s.digests[i] = s.match.Digest(*x.Request)
		}
	}
	return s
}

// Model puts the cassette between the runs and model addr: it is the
// method engine.Options.Cassette calls for every model it would build.
// live builds the real model, when a call needs it (never in Replay
// mode); redact takes the run's secrets out of a JSON value, and every
// exchange the session keeps passes through it.
func (s *Session) Model(addr string, live func() (provider.Model, error), redact func(json []byte) []byte) (provider.Model, error) {
	return &tape{s: s, addr: addr, live: live, redact: redact}, nil
}

// Mismatches are the requests that matched no recorded exchange (in Update
// mode too, though those were recorded afresh).
func (s *Session) Mismatches() []*MismatchError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*MismatchError(nil), s.mismatches...)
}

// Changed reports whether Cassette differs from the cassette the session
// started from: always in Record mode; in Update mode when an exchange was
// recorded again, given its request, or left unused (it is dropped).
func (s *Session) Changed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.Mode == Record {
		return true
	}
	if s.opts.Mode == Replay {
		return false
	}
	if len(s.replaced) > 0 || len(s.extra) > 0 || s.pinned {
		return true
	}
	if s.liveFailed {
		return false
	}
	for _, p := range s.played {
		if !p {
			return true
		}
	}
	return false
}

// Cassette is the cassette as the session leaves it. Record: every
// exchange, in the order the calls ended. Update: the exchanges the run
// used, where they were, each re-recorded one in the place of the one it
// replaces and those without one at the end; an exchange no call used is
// dropped, unless a live call failed (then every exchange is kept, and a
// failed call replaces none). Replay: the cassette as it was.
func (s *Session) Cassette() *Cassette {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &Cassette{Format: FormatVersion, Match: s.match, Exchanges: []Exchange{}}
	for i, x := range s.recorded {
		switch nx, ok := s.replaced[i]; {
		case ok:
			out.Exchanges = append(out.Exchanges, nx)
		case s.played[i] || s.opts.Mode == Replay || s.liveFailed:
			out.Exchanges = append(out.Exchanges, x)
		}
	}
	out.Exchanges = append(out.Exchanges, s.extra...)
	return out
}

// MismatchError is a request that matches no recorded exchange: Diff says
// how it differs from the exchange it was compared with (Index, in the
// cassette), or there was none left for its model (Index -1).
type MismatchError struct {
	Cassette string // the cassette's name (path)
	Model    string // the model's address
	Call     int    // which call to the model, from 1
	Index    int    // the exchange compared with, -1 when none was left
	Left     int    // exchanges of the model in the cassette
	Diff     string
}

func (e *MismatchError) Error() string {
	name := e.Cassette
	if name == "" {
		name = "the cassette"
	}
	if e.Index < 0 {
		return fmt.Sprintf("%s: call %d to the model has no recorded exchange in %s (it has %d for this model, all used): the run now makes more calls than were recorded",
			e.Model, e.Call, name, e.Left)
	}
	return fmt.Sprintf("%s: the request of call %d differs from exchange %d of %s:\n%s", e.Model, e.Call, e.Index+1, name, strings.TrimRight(e.Diff, "\n"))
}

// take finds the exchange for req, marks it used and returns it; nil, with
// the mismatch, when there is none. In Update mode the exchange compared
// with is marked used too: it is the one a new recording replaces.
func (s *Session) take(addr string, req provider.Request) (*Exchange, int, *MismatchError) {
	digest := s.match.Digest(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[addr]++
	candidate, total := -1, 0
	for i := range s.recorded {
		x := &s.recorded[i]
		if x.Model != addr {
			continue
		}
		total++
		if s.played[i] {
			continue
		}
		if candidate < 0 {
			candidate = i
		}
		if s.digests[i] != "" && s.digests[i] != digest {
			continue
		}
		s.played[i] = true
		out := *x
		if x.Request == nil && s.opts.Mode == Update {
			r := cloneRequest(req)
			out.Request = &r
			s.replaced[i] = out
			s.pinned = true
		}
		return &out, i, nil
	}
	me := &MismatchError{Cassette: s.opts.Name, Model: addr, Call: s.calls[addr], Index: candidate, Left: total}
	if candidate >= 0 {
		me.Diff = s.match.Diff(*s.recorded[candidate].Request, req)
		if s.opts.Mode == Update {
			s.played[candidate] = true
		}
	}
	s.mismatches = append(s.mismatches, me)
	return nil, candidate, me
}

// keep stores an exchange recorded live: in Update mode in the place of the
// one it replaces (replace ≥ 0).
func (s *Session) keep(x Exchange, replace int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if replace >= 0 && s.opts.Mode == Update {
		s.replaced[replace] = x
		return
	}
	s.extra = append(s.extra, x)
}

// LiveFailed reports whether, in Update mode, a call to a live model
// failed; the cassette then keeps every exchange it had.
func (s *Session) LiveFailed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveFailed
}

func (s *Session) failed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.liveFailed = true
}

// tape is the model a run calls for one model address.
type tape struct {
	s      *Session
	addr   string
	live   func() (provider.Model, error)
	redact func([]byte) []byte

	once    sync.Once
	model   provider.Model
	liveErr error
}

func (t *tape) liveModel() (provider.Model, error) {
	t.once.Do(func() {
		if t.live == nil {
			t.liveErr = fmt.Errorf("%s: no live model to record from", t.addr)
			return
		}
		t.model, t.liveErr = t.live()
	})
	return t.model, t.liveErr
}

func (t *tape) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return provider.Response{}, err
	}
	// The engine sends requests redacted; the session compares and keeps
	// them as the redactor leaves them, whatever the caller.
	req = t.cleanRequest(req)
	if t.s.opts.Mode == Record {
		return t.record(ctx, req, onEvent, -1)
	}
	x, idx, mismatch := t.s.take(t.addr, req)
	if x != nil {
		return play(ctx, *x, onEvent)
	}
	if t.s.opts.Mode == Replay {
		return provider.Response{}, &provider.Error{Kind: provider.InvalidRequest, Detail: "cassette", Err: mismatch}
	}
	return t.record(ctx, req, onEvent, idx)
}

// record calls the live model and keeps the exchange, redacted. A call
// cut short by its context is not kept: it is not what the model does.
func (t *tape) record(ctx context.Context, req provider.Request, onEvent func(provider.Event), replace int) (provider.Response, error) {
	m, err := t.liveModel()
	if err != nil {
		t.s.failed()
		return provider.Response{}, err
	}
	start := t.s.opts.Now()
	var chunks []Chunk
	resp, err := m.Stream(ctx, req, func(ev provider.Event) {
		if t.s.opts.Chunks {
			chunks = append(chunks, Chunk{AtMS: t.s.opts.Now().Sub(start).Milliseconds(), Content: ev.ContentDelta, Reasoning: ev.ReasoningDelta, ToolCall: ev.ToolCallDelta})
		}
		if onEvent != nil {
			onEvent(ev)
		}
	})
	if err != nil && ctx.Err() != nil {
		return resp, err
	}
	if err != nil && t.s.opts.Mode == Update {
		// A failure re-recording is not the exchange to keep: the
		// recorded one stays until a call succeeds.
		t.s.failed()
		return resp, err
	}
	r := cloneRequest(req)
	x := Exchange{Model: t.addr, Request: &r, Chunks: chunks}
	if err != nil {
		x.Error = errorOf(err)
	} else {
		rc := cloneResponse(resp)
		x.Response = &rc
	}
	t.s.keep(t.cleanExchange(x), replace)
	return resp, err
}

// cleanRequest is req through the redactor.
func (t *tape) cleanRequest(req provider.Request) provider.Request {
	if t.redact == nil {
		return req
	}
	var out provider.Request
	if roundTrip(req, &out, t.redact) != nil {
		return req
	}
	return out
}

// cleanExchange is x through the redactor; should the round trip fail, the
// exchange keeps only what cannot hold a secret.
func (t *tape) cleanExchange(x Exchange) Exchange {
	if t.redact == nil {
		return x
	}
	var out Exchange
	if err := roundTrip(x, &out, t.redact); err != nil {
		return Exchange{Model: x.Model, Error: &Error{Kind: provider.MalformedResponse, Message: "the exchange could not be recorded: " + err.Error()}}
	}
	return out
}

func roundTrip(in, out any, redact func([]byte) []byte) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(redact(b), out)
}

// play answers a call from a recorded exchange: its error, or its
// response, streamed as its chunks (or as one delta each for the
// reasoning, the content and every tool call).
func play(ctx context.Context, x Exchange, onEvent func(provider.Event)) (provider.Response, error) {
	if x.Error != nil {
		return provider.Response{}, x.Error.providerError()
	}
	resp := cloneResponse(*x.Response)
	if resp.Content == "" && len(resp.ToolCalls) == 0 {
		return provider.Response{}, &provider.Error{Kind: provider.EmptyResponse, Detail: "recorded response has neither content nor tool calls"}
	}
	emit := func(ev provider.Event) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if onEvent != nil {
			onEvent(ev)
		}
		return nil
	}
	var events []provider.Event
	if len(x.Chunks) > 0 {
		for _, c := range x.Chunks {
			events = append(events, provider.Event{ContentDelta: c.Content, ReasoningDelta: c.Reasoning, ToolCallDelta: c.ToolCall})
		}
	} else {
		if resp.Reasoning != "" {
			events = append(events, provider.Event{ReasoningDelta: resp.Reasoning})
		}
		if resp.Content != "" {
			events = append(events, provider.Event{ContentDelta: resp.Content})
		}
		for _, c := range resp.ToolCalls {
			events = append(events, provider.Event{ToolCallDelta: c.Name + c.Arguments})
		}
	}
	for _, ev := range events {
		if err := emit(ev); err != nil {
			return provider.Response{}, err
		}
	}
	return resp, ctx.Err()
}

// cloneRequest copies what a caller might change after the call.
func cloneRequest(req provider.Request) provider.Request {
	msgs := make([]provider.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.ToolCalls = append([]provider.ToolCall(nil), m.ToolCalls...)
		m.Thinking = append([]provider.Thinking(nil), m.Thinking...)
		msgs[i] = m
	}
	req.Messages = msgs
	req.Tools = append([]provider.ToolSpec(nil), req.Tools...)
	if req.Temperature != nil {
		t := *req.Temperature
		req.Temperature = &t
	}
	return req
}

// cloneResponse copies the slices the engine changes (it names tool calls
// that came without an id).
func cloneResponse(r provider.Response) provider.Response {
	r.ToolCalls = append([]provider.ToolCall(nil), r.ToolCalls...)
	r.Thinking = append([]provider.Thinking(nil), r.Thinking...)
	return r
}
