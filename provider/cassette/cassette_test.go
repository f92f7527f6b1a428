package cassette

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/provider"
)

// liveModel answers every request with reply(req) and counts the calls.
type liveModel struct {
	calls atomic.Int32
	reply func(req provider.Request) (provider.Response, error)
}

func (m *liveModel) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	m.calls.Add(1)
	resp, err := m.reply(req)
	if err == nil && onEvent != nil {
		for _, piece := range strings.SplitAfter(resp.Content, " ") {
			onEvent(provider.Event{ContentDelta: piece})
		}
	}
	return resp, err
}

func liveFor(m provider.Model) func() (provider.Model, error) {
	return func() (provider.Model, error) { return m, nil }
}

// echo answers with the latest message's content, upper-cased.
func echo() *liveModel {
	return &liveModel{reply: func(req provider.Request) (provider.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		return provider.Response{Content: "ANSWER " + strings.ToUpper(last), Usage: provider.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}, UsageKnown: true, FinishReason: "stop"}, nil
	}}
}

func request(system string, user ...string) provider.Request {
	r := provider.Request{Model: "gpt-test", Messages: []provider.Message{{Role: provider.System, Content: system}},
		Tools:           []provider.ToolSpec{{Name: "calculator", Description: "Evaluate an arithmetic expression", Parameters: []byte(`{"type":"object","properties":{"expression":{"type":"string"}}}`)}},
		MaxOutputTokens: 100}
	for _, u := range user {
		r.Messages = append(r.Messages, provider.Message{Role: provider.User, Content: u})
	}
	return r
}

func call(t *testing.T, m provider.Model, req provider.Request) (provider.Response, string, error) {
	t.Helper()
	var streamed strings.Builder
	resp, err := m.Stream(context.Background(), req, func(ev provider.Event) { streamed.WriteString(ev.ContentDelta) })
	return resp, streamed.String(), err
}

func model(t *testing.T, s *Session, addr string, live provider.Model, redact func([]byte) []byte) provider.Model {
	t.Helper()
	var build func() (provider.Model, error)
	if live != nil {
		build = liveFor(live)
	}
	m, err := s.Model(addr, build, redact)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// record makes a cassette of the given requests to one model.
func record(t *testing.T, live provider.Model, reqs ...provider.Request) *Cassette {
	t.Helper()
	s := NewSession(nil, Options{Mode: Record})
	m := model(t, s, "model.fast", live, nil)
	for _, r := range reqs {
		if _, _, err := call(t, m, r); err != nil {
			t.Fatal(err)
		}
	}
	return s.Cassette()
}

// TestRecordThenReplay: what a recording session saw, a replaying one
// answers, byte for byte, without calling the model; the file form is
// stable and parses back to the same cassette.
func TestRecordThenReplay(t *testing.T) {
	live := echo()
	reqs := []provider.Request{request("Be brief.", "six times seven"), request("Be brief.", "six times seven", "and eight?")}
	c := record(t, live, reqs...)
	if live.calls.Load() != 2 || len(c.Exchanges) != 2 {
		t.Fatalf("recorded %d exchanges in %d calls", len(c.Exchanges), live.calls.Load())
	}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("{\n  \"cassette_format\": 1,\n  \"match\": {\n    \"ignore\": [\n      \"max_output_tokens\"\n    ]\n  },\n  \"exchanges\": [\n    {\n      \"model\": \"model.fast\",\n      \"request_digest\": \"sha256:")) {
		t.Errorf("the file does not start as documented:\n%s", b)
	}
	parsed, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := parsed.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again) {
		t.Errorf("encoding is not stable:\n%s", cmp.Diff(string(b), string(again)))
	}

	s := NewSession(parsed, Options{Mode: Replay, Name: "c.json"})
	m := model(t, s, "model.fast", nil, nil)
	for i, r := range reqs {
		resp, streamed, err := call(t, m, r)
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		want, _ := live.reply(r)
		if diff := cmp.Diff(want, resp); diff != "" {
			t.Errorf("replay %d differs from the recording:\n%s", i, diff)
		}
		if streamed != want.Content {
			t.Errorf("replay %d streamed %q, want %q", i, streamed, want.Content)
		}
	}
	if live.calls.Load() != 2 {
		t.Errorf("replay called the live model")
	}
	if _, _, err := call(t, m, reqs[0]); err == nil {
		t.Error("a third call was answered, though every exchange was used")
	} else {
		var me *MismatchError
		if !errors.As(err, &me) || me.Index != -1 || !strings.Contains(err.Error(), "has no recorded exchange in c.json (it has 2 for this model, all used)") {
			t.Errorf("a call beyond the recording: %v", err)
		}
		if provider.KindOf(err) != provider.InvalidRequest {
			t.Errorf("kind %q, want invalid_request", provider.KindOf(err))
		}
	}
	if s.Changed() {
		t.Error("a replay changed the cassette")
	}
}

// TestMismatchDiff: a request that differs says where, in the request's
// words, and only there.
func TestMismatchDiff(t *testing.T) {
	c := record(t, echo(), request("You are a careful assistant.\nUse the calculator.", "six times seven"))
	s := NewSession(c, Options{Mode: Replay, Name: "tests/quick.json"})
	m := model(t, s, "model.fast", nil, nil)
	changed := request("You are a terse assistant.\nUse the calculator.", "six times seven")
	changed.Tools[0].Description = "Evaluate an expression"
	changed.Tools = append(changed.Tools, provider.ToolSpec{Name: "clock", Description: "The time"})
	changed.MaxOutputTokens = 50 // ignored by default
	_, _, err := call(t, m, changed)
	var me *MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("error %v, want a *MismatchError", err)
	}
	want := `model.fast: the request of call 1 differs from exchange 1 of tests/quick.json:
  messages[0] (the system prompt) differs:
    - You are a careful assistant.
    + You are a terse assistant.
      Use the calculator.
  tool "calculator" differs:
    description:
    - Evaluate an arithmetic expression
    + Evaluate an expression
  tool "clock" was not recorded (it is new)`
	if me.Error() != want {
		t.Errorf("the mismatch reads\n%s\nwant\n%s\n%s", me.Error(), want, cmp.Diff(want, me.Error()))
	}
	if got := s.Mismatches(); len(got) != 1 || got[0] != me {
		t.Errorf("Mismatches() = %v", got)
	}
}

func TestDiffMessagesAndSettings(t *testing.T) {
	var m Match
	temp := 0.5
	a := request("sys", "hello")
	b := request("sys", "hello", "more")
	b.Temperature = &temp
	b.ToolChoice = "required"
	b.Messages[1].Content = "hello\x1b[31m"
	got := m.Diff(a, b)
	for _, want := range []string{
		"messages: 2 recorded, 3 sent",
		"messages[1] (user) differs:\n    - hello\n    + hello\\u001b[31m",
		`messages[2] (user) was not recorded: "more"`,
		`tool_choice: "" → "required"`,
		"temperature: unset → 0.5",
		"max_output_tokens: 100 → 100", // not ignored by a zero Match, but equal: must not appear
	} {
		if strings.HasPrefix(want, "max_output_tokens") {
			if strings.Contains(got, want) {
				t.Errorf("equal fields are listed:\n%s", got)
			}
			continue
		}
		if !strings.Contains(got, want) {
			t.Errorf("the diff lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("the diff lets a control character through: %q", got)
	}
	if d := m.Diff(a, a); d != "  (the requests are equal)\n" {
		t.Errorf("equal requests: %q", d)
	}
}

func TestLineDiffContext(t *testing.T) {
	var d differ
	old := "a\nb\nc\nd\ne\nf\ng"
	d.lines(old, strings.Replace(old, "d", "D", 1))
	want := "    …\n    c\n  - d\n  + D\n    e\n    …\n"
	if d.b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", d.b.String(), want)
	}
}

// TestUpdateReRecordsOnlyWhatChanged: with the second request changed, the
// first exchange is kept as it was and only the second is recorded again,
// in its place; an exchange the run no longer reaches is dropped.
func TestUpdateReRecordsOnlyWhatChanged(t *testing.T) {
	first, second, third := request("s", "one"), request("s", "one", "two"), request("s", "one", "two", "three")
	c := record(t, echo(), first, second, third)
	c.Exchanges[0].Response.Content = "hand-edited, and kept"

	live := echo()
	s := NewSession(c, Options{Mode: Update, Name: "c.json"})
	m := model(t, s, "model.fast", live, nil)
	if resp, _, err := call(t, m, first); err != nil || resp.Content != "hand-edited, and kept" {
		t.Fatalf("the matching first call: %q, %v", resp.Content, err)
	}
	changed := request("s", "one", "TWO")
	resp, _, err := call(t, m, changed)
	if err != nil || resp.Content != "ANSWER TWO" {
		t.Fatalf("the changed call: %q, %v", resp.Content, err)
	}
	if live.calls.Load() != 1 {
		t.Errorf("the live model was called %d times, want once", live.calls.Load())
	}
	if len(s.Mismatches()) != 1 || !s.Changed() {
		t.Errorf("mismatches %d, changed %t", len(s.Mismatches()), s.Changed())
	}
	out := s.Cassette()
	if len(out.Exchanges) != 2 {
		t.Fatalf("%d exchanges, want 2 (the third, no longer reached, dropped)", len(out.Exchanges))
	}
	if out.Exchanges[0].Response.Content != "hand-edited, and kept" {
		t.Errorf("the first exchange was not kept: %+v", out.Exchanges[0])
	}
	if got := out.Exchanges[1].Request.Messages[2].Content; got != "TWO" {
		t.Errorf("the second exchange holds the request %q, want the new one", got)
	}

	// Replaying the updated cassette needs no model.
	s2 := NewSession(out, Options{Mode: Replay})
	m2 := model(t, s2, "model.fast", nil, nil)
	for _, r := range []provider.Request{first, changed} {
		if _, _, err := call(t, m2, r); err != nil {
			t.Errorf("replaying the updated cassette: %v", err)
		}
	}
}

// TestUpdateAllMatched: nothing changes when everything matches.
func TestUpdateAllMatched(t *testing.T) {
	r := request("s", "one")
	c := record(t, echo(), r)
	s := NewSession(c, Options{Mode: Update})
	if _, _, err := call(t, model(t, s, "model.fast", nil, nil), r); err != nil {
		t.Fatal(err)
	}
	if s.Changed() {
		t.Error("an update where everything matched changed the cassette")
	}
}

// TestUnpinnedExchanges: an exchange without a request (exported from a
// journal) matches any request of its model in its turn, and Update gives
// it the request without calling the model.
func TestUnpinnedExchanges(t *testing.T) {
	c := New()
	c.Exchanges = []Exchange{
		{Model: "model.fast", Response: &provider.Response{Content: "first"}},
		{Model: "model.other", Response: &provider.Response{Content: "other"}},
		{Model: "model.fast", Response: &provider.Response{Content: "second"}},
	}
	s := NewSession(c, Options{Mode: Update})
	fast := model(t, s, "model.fast", nil, nil) // no live model: none may be needed
	for _, want := range []string{"first", "second"} {
		resp, _, err := call(t, fast, request("s", want))
		if err != nil || resp.Content != want {
			t.Fatalf("got %q, %v; want %q", resp.Content, err, want)
		}
	}
	out := s.Cassette()
	if len(out.Exchanges) != 2 || out.Exchanges[0].Request == nil || out.Exchanges[1].Request.Messages[1].Content != "second" {
		t.Errorf("the pinned cassette: %+v", out.Exchanges)
	}
	if !s.Changed() {
		t.Error("pinning did not count as a change")
	}
}

// TestRecordRedacts: a secret in the request or echoed in the response
// never reaches the cassette, in any field; the caller still gets the
// response as the model sent it (the engine redacts what it shows).
func TestRecordRedacts(t *testing.T) {
	const secret = "sk-live-SECRET-1234"
	redact := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(secret), []byte("[redacted]")) }
	live := &liveModel{reply: func(req provider.Request) (provider.Response, error) {
		if len(req.Messages) > 2 {
			return provider.Response{}, &provider.Error{Kind: provider.AuthenticationFailed, StatusCode: 401, Err: errors.New("bad key " + secret)}
		}
		return provider.Response{Content: "your key is " + secret, Reasoning: "it was " + secret,
			ToolCalls: []provider.ToolCall{{ID: "c1", Name: "t", Arguments: `{"k":"` + secret + `"}`}}}, nil
	}}
	s := NewSession(nil, Options{Mode: Record, Chunks: true})
	m := model(t, s, "model.fast", live, redact)
	resp, _, err := call(t, m, request("key "+secret, "echo it"))
	if err != nil || !strings.Contains(resp.Content, secret) {
		t.Fatalf("the caller's response: %q, %v", resp.Content, err)
	}
	if _, _, err := call(t, m, request("s", "a", "b")); err == nil {
		t.Fatal("the failing call succeeded")
	}
	b, err := s.Cassette().Encode()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("SECRET")) {
		t.Errorf("the cassette holds the secret:\n%s", b)
	}
	if !bytes.Contains(b, []byte("[redacted]")) {
		t.Errorf("nothing was redacted:\n%s", b)
	}
}

// TestErrorsReplay: a recorded failure replays as the same provider error.
func TestErrorsReplay(t *testing.T) {
	live := &liveModel{reply: func(provider.Request) (provider.Response, error) {
		return provider.Response{}, &provider.Error{Kind: provider.RateLimited, StatusCode: 429, RetryAfter: 2e9, Err: errors.New("slow down")}
	}}
	c := record(t, live)
	s := NewSession(nil, Options{Mode: Record})
	if _, _, err := call(t, model(t, s, "model.fast", live, nil), request("s", "x")); err == nil {
		t.Fatal("no error")
	}
	c = s.Cassette()
	_, _, err := call(t, model(t, NewSession(c, Options{Mode: Replay}), "model.fast", nil, nil), request("s", "x"))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.RateLimited || pe.StatusCode != 429 || pe.RetryAfter != 2e9 || pe.Err.Error() != "slow down" {
		t.Errorf("replayed error: %#v", err)
	}
}

// TestMatchRules: ignored fields and normalized text do not count; other
// fields do.
func TestMatchRules(t *testing.T) {
	c := New()
	c.Match.Normalize = []string{`\d{4}-\d{2}-\d{2}T[0-9:]+Z`}
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
	recorded := request("s", "the time is 2026-12-02T10:00:00Z")
	sent := request("s", "the time is 2027-01-01T00:00:01Z")
	sent.MaxOutputTokens = 7
	if c.Match.Digest(recorded) != c.Match.Digest(sent) {
		t.Errorf("normalized text or an ignored field counted:\n%s", c.Match.Diff(recorded, sent))
	}
	sent.Model = "another"
	if c.Match.Digest(recorded) == c.Match.Digest(sent) {
		t.Error("the model name did not count")
	}
	c.Match.Ignore = append(c.Match.Ignore, "model", "tools")
	sent.Tools = nil
	if c.Match.Digest(recorded) != c.Match.Digest(sent) {
		t.Errorf("ignored model and tools counted:\n%s", c.Match.Diff(recorded, sent))
	}
}

// TestConcurrentCalls: calls that arrive together each get the exchange
// of their own request, whatever the order.
func TestConcurrentCalls(t *testing.T) {
	var reqs []provider.Request
	for _, q := range []string{"a", "b", "c", "d", "e", "f"} {
		reqs = append(reqs, request("s", q))
	}
	c := record(t, echo(), reqs...)
	s := NewSession(c, Options{Mode: Replay})
	m := model(t, s, "model.fast", nil, nil)
	var wg sync.WaitGroup
	for i := len(reqs) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := m.Stream(context.Background(), reqs[i], nil)
			if err != nil || resp.Content != "ANSWER "+strings.ToUpper(reqs[i].Messages[1].Content) {
				t.Errorf("call %d: %q, %v", i, resp.Content, err)
			}
		}()
	}
	wg.Wait()
}

func TestChunksReplay(t *testing.T) {
	s := NewSession(nil, Options{Mode: Record, Chunks: true})
	r := request("s", "three words here")
	if _, _, err := call(t, model(t, s, "model.fast", echo(), nil), r); err != nil {
		t.Fatal(err)
	}
	c := s.Cassette()
	if len(c.Exchanges[0].Chunks) != 4 {
		t.Fatalf("chunks %+v, want the 4 streamed pieces", c.Exchanges[0].Chunks)
	}
	var pieces []string
	_, err := model(t, NewSession(c, Options{Mode: Replay}), "model.fast", nil, nil).Stream(context.Background(), r,
		func(ev provider.Event) { pieces = append(pieces, ev.ContentDelta) })
	if err != nil || strings.Join(pieces, "|") != "ANSWER |THREE |WORDS |HERE" {
		t.Errorf("replayed pieces %q, %v", pieces, err)
	}
}

func TestParseErrors(t *testing.T) {
	ok := `{"model":"model.a","response":{"content":"x","usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"usage_known":true}}`
	for _, tc := range []struct{ name, in, want string }{
		{"empty", ``, "empty input"},
		{"not a cassette", `{"exchanges":[]}`, "cassette_format: missing"},
		{"newer", `{"cassette_format":2,"match":{"ignore":[]},"exchanges":[]}`, "newer than this symbi reads"},
		{"unknown field", "{\n  \"cassette_format\": 1,\n  \"exchange\": []\n}", `3:`},
		{"syntax", "{\n  \"cassette_format\": 1,\n  \"exchanges\": [,]\n}", "3:17: invalid character ','"},
		{"type", "{\"cassette_format\": \"one\"}", "1:"},
		{"bad ignore", `{"cassette_format":1,"match":{"ignore":["messages"]},"exchanges":[]}`, `match.ignore[0]: "messages" is not a request field`},
		{"bad normalize", `{"cassette_format":1,"match":{"ignore":[],"normalize":["("]},"exchanges":[]}`, "match.normalize[0]"},
		{"empty normalize", `{"cassette_format":1,"match":{"ignore":[],"normalize":["a*"]},"exchanges":[]}`, "matches the empty string"},
		{"no model", `{"cassette_format":1,"match":{"ignore":[]},"exchanges":[{"response":{"content":"x"}}]}`, "exchanges[0].model: the model's address is required"},
		{"both", `{"cassette_format":1,"match":{"ignore":[]},"exchanges":[` + ok + `,{"model":"model.a","response":{"content":"x"},"error":{"kind":"timeout"}}]}`, "exchanges[1]: an exchange has exactly one of response and error"},
		{"bad kind", `{"cassette_format":1,"match":{"ignore":[]},"exchanges":[{"model":"model.a","error":{"kind":"oops"}}]}`, `exchanges[0].error.kind: "oops" is not a provider error kind`},
		{"bad role", `{"cassette_format":1,"match":{"ignore":[]},"exchanges":[{"model":"model.a","request":{"model":"m","messages":[{"role":"robot"}]},"response":{"content":"x"}}]}`, `exchanges[0].request.messages[0].role: "robot"`},
		{"negative usage", `{"cassette_format":1,"match":{"ignore":[]},"exchanges":[{"model":"model.a","response":{"content":"x","usage":{"prompt_tokens":-1}}}]}`, "exchanges[0].response.usage"},
		{"trailing", `{"cassette_format":1,"match":{"ignore":[]},"exchanges":[]} {}`, "unexpected data after the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(p, []byte("{\n  \"cassette_format\": 1,\n  oops\n}"), 0o644)
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+":3:3: invalid character 'o'") {
		t.Errorf("Load: %v", err)
	}
}

func TestSaveIsAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.json")
	c := record(t, echo(), request("s", "x"))
	if err := c.Save(p); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("Save left %d files, want the cassette alone", len(entries))
	}
}

// FuzzParse: no input makes Parse panic or hang; what it accepts encodes,
// parses back and encodes to the same bytes (the file form is stable), and
// every exchange replays without panicking.
func FuzzParse(f *testing.F) {
	c := New()
	temp := 0.2
	c.Exchanges = []Exchange{
		{Model: "model.a", Request: &provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.User, Content: "hi"}}, Temperature: &temp}, Response: &provider.Response{Content: "hello", FinishReason: "stop"}},
		{Model: "model.a", Error: &Error{Kind: provider.Timeout, Detail: "idle"}},
		{Model: "model.b", Response: &provider.Response{ToolCalls: []provider.ToolCall{{ID: "c", Name: "t", Arguments: "{}"}}}, Chunks: []Chunk{{AtMS: 3, ToolCall: "t{}"}}},
	}
	seed, _ := c.Encode()
	f.Add(seed)
	f.Add([]byte(`{"cassette_format":1,"match":{"ignore":["tools"],"normalize":["\\d+"]},"exchanges":[]}`))
	f.Add([]byte(`{"cassette_format":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		b, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode of a parsed cassette: %v", err)
		}
		c2, err := Parse(b)
		if err != nil {
			t.Fatalf("the encoded cassette does not parse: %v\n%s", err, b)
		}
		b2, err := c2.Encode()
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("the encoding is not stable: %v\n%s\n%s", err, b, b2)
		}
		s := NewSession(c2, Options{Mode: Replay})
		models := map[string]provider.Model{}
		for _, x := range c2.Exchanges {
			m, ok := models[x.Model]
			if !ok {
				m, _ = s.Model(x.Model, nil, nil)
				models[x.Model] = m
			}
			req := provider.Request{Model: "x"}
			if x.Request != nil {
				req = *x.Request
			}
			_, _ = m.Stream(context.Background(), req, func(provider.Event) {})
		}
	})
}

// TestUpdateKeepsEverythingWhenTheLiveModelFails: re-recording that fails
// (the provider down, no key) replaces nothing and drops nothing.
func TestUpdateKeepsEverythingWhenTheLiveModelFails(t *testing.T) {
	first, second, third := request("s", "one"), request("s", "one", "two"), request("s", "one", "two", "three")
	c := record(t, echo(), first, second, third)
	down := &liveModel{reply: func(provider.Request) (provider.Response, error) {
		return provider.Response{}, &provider.Error{Kind: provider.TransportFailed, Err: errors.New("connection refused")}
	}}
	s := NewSession(c, Options{Mode: Update})
	m := model(t, s, "model.fast", down, nil)
	if _, _, err := call(t, m, first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := call(t, m, request("s", "one", "TWO")); provider.KindOf(err) != provider.TransportFailed {
		t.Fatalf("the failed re-recording: %v", err)
	}
	if s.Changed() {
		t.Error("a failed re-recording changed the cassette")
	}
	if out := s.Cassette(); len(out.Exchanges) != 3 || out.Exchanges[1].Request.Messages[2].Content != "two" {
		t.Errorf("the cassette after a failed re-recording: %+v", out.Exchanges)
	}

	broken := NewSession(c, Options{Mode: Update})
	nm, _ := broken.Model("model.fast", func() (provider.Model, error) { return nil, errors.New("missing_api_key") }, nil)
	if _, _, err := call(t, nm, request("s", "changed")); err == nil || broken.Changed() || len(broken.Cassette().Exchanges) != 3 {
		t.Errorf("a live model that cannot be built: %v, changed %t", err, broken.Changed())
	}
}
