package engine

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/cassette"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestCassetteRecordsRedacted records a run whose model is sent its key
// in the input and echoes it back, in the answer and in a tool call's
// arguments: the cassette holds neither the key nor a piece of it, through
// the engine's own redactor, and the run replays from it with the server
// gone and no key set.
func TestCassetteRecordsRedacted(t *testing.T) {
	const key = "sk-test-7c0ffee5e1"
	srv := fakeserver.New(t, fakeserver.WithReplies(
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7","note":"` + key + `"}`}}},
		fakeserver.Text("the key was ", key, ", and 6*7 is 42"),
	))
	hcl := strings.Replace(openaiHCL(srv.URL()), `name     = "fake-model"`, `name     = "fake-model"
  api_key_env = "FAKE_KEY"`, 1)
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	rec := cassette.NewSession(nil, cassette.Options{Mode: cassette.Record})
	e, _ := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) { return key, n == "FAKE_KEY" }
		o.Cassette = rec
	})
	res := mustRun(t, e, "a", "my key is "+key+"; what is 6*7?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("recording run: %s", res.Termination)
	}
	c := rec.Cassette()
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Exchanges) != 2 {
		t.Fatalf("%d exchanges recorded, want 2:\n%s", len(c.Exchanges), b)
	}
	for _, piece := range []string{key, "7c0ffee5e1", "sk-test"} {
		if bytes.Contains(b, []byte(piece)) {
			t.Errorf("the cassette holds %q:\n%s", piece, b)
		}
	}
	if !bytes.Contains(b, []byte("[redacted]")) {
		t.Errorf("nothing in the cassette was redacted:\n%s", b)
	}
	srv.Close()

	// Replayed: no server, no key.
	parsed, err := cassette.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	play := cassette.NewSession(parsed, cassette.Options{Mode: cassette.Replay})
	e2, _ := newEngine(t, p, dir, func(o *Options) { o.Cassette = play })
	res2 := mustRun(t, e2, "a", "my key is [redacted]; what is 6*7?", RunOptions{})
	if res2.Termination.Reason != Completed || res2.Answer != res.Answer {
		t.Fatalf("replay: %s, answer %q; the recording answered %q", res2.Termination, res2.Answer, res.Answer)
	}
	if len(play.Mismatches()) != 0 {
		t.Errorf("mismatches: %v", play.Mismatches())
	}
}

// TestCassetteMismatchEndsTheRun: a changed system prompt meets the
// recording, and the run fails with the mismatch, typed, its diff naming
// the system prompt.
func TestCassetteMismatchEndsTheRun(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("42")))
	hcl := openaiHCL(srv.URL())
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	rec := cassette.NewSession(nil, cassette.Options{Mode: cassette.Record})
	e, _ := newEngine(t, p, dir, func(o *Options) { o.Cassette = rec })
	if res := mustRun(t, e, "a", "6*7?", RunOptions{}); res.Termination.Reason != Completed {
		t.Fatal(res.Termination)
	}

	changed, dir2 := fixture{"main.hcl": strings.Replace(hcl, "policies = [policy.rules]", "policies = [policy.rules]\n  system = \"Answer in French.\"", 1)}.compile(t)
	play := cassette.NewSession(rec.Cassette(), cassette.Options{Mode: cassette.Replay, Name: "c.json"})
	e2, _ := newEngine(t, changed, dir2, func(o *Options) { o.Cassette = play })
	res := mustRun(t, e2, "a", "6*7?", RunOptions{})
	if res.Termination.Reason != Failed {
		t.Fatalf("got %s, want the run to fail", res.Termination)
	}
	var me *cassette.MismatchError
	if !errors.As(res.Termination.Err, &me) || provider.KindOf(res.Termination.Err) != provider.InvalidRequest {
		t.Fatalf("termination error %v is not a cassette mismatch", res.Termination.Err)
	}
	if !strings.Contains(me.Diff, "messages: 1 recorded, 2 sent\n  messages[0] (system) was not recorded: \"Answer in French.\"\n") {
		t.Errorf("the diff does not show the new system prompt:\n%s", me.Diff)
	}
}
