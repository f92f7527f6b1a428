package engine

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestSecretSplitAcrossDeltasIsRedacted has the model echo its API key in
// pieces, cut inside the key: no delta, no event, no journal line and not
// the Result shows it, and the text around it arrives whole.
func TestSecretSplitAcrossDeltasIsRedacted(t *testing.T) {
	const key = "sk-test-5f8e2a91c4"
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("your key is sk-te", "st-5f8", "e2a91c4, keep it s", "k-t")))
	hcl := strings.Replace(openaiHCL(srv.URL()), `name     = "fake-model"`, `name     = "fake-model"
  api_key_env = "FAKE_KEY"`, 1)
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	e, rec := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) {
			if n == "FAKE_KEY" {
				return key, true
			}
			return "", false
		}
	})
	res := mustRun(t, e, "a", "what is my key?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	const want = "your key is [redacted], keep it sk-t"
	if res.Answer != want {
		t.Errorf("answer %q, want %q", res.Answer, want)
	}
	var streamed strings.Builder
	sawReasoning := false
	for _, ev := range rec.events {
		if strings.Contains(string(ev.Data), key) || strings.Contains(ev.Delta, key) {
			t.Errorf("the key reached the observer in %s", ev.Type)
		}
		if ev.Type == ContentDelta {
			if sawReasoning {
				t.Errorf("delta %q after the turn's reasoning_complete", ev.Delta)
			}
			streamed.WriteString(ev.Delta)
		}
		sawReasoning = sawReasoning || ev.Type == journal.ReasoningComplete
	}
	if streamed.String() != want {
		t.Errorf("streamed %q, want %q (the held-back tail is flushed when the turn ends)", streamed.String(), want)
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(journal.Path(e.StateDir(), res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), key) || !strings.Contains(string(b), "[redacted]") {
		t.Errorf("journal:\n%s", b)
	}
}

// TestSecretInErrorIsRedacted points the model's base_url at a closed port
// with a token from the environment in its path: the transport error quotes
// the URL, and the Result's detail and error, the journal and the events
// show the token as [redacted] while errors.As still finds the provider
// error.
func TestSecretInErrorIsRedacted(t *testing.T) {
	const token = "tok-5e1d9c0b7a"
	srv := fakeserver.New(t)
	url := srv.URL()
	srv.Close()
	hcl := strings.Replace(openaiHCL(url), `base_url = "`+url+`"`, `base_url = "`+url+`/${env("TOKEN")}"`, 1)
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	e, rec := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) {
			if n == "TOKEN" {
				return token, true
			}
			return "", false
		}
	})
	res := mustRun(t, e, "a", "hi", RunOptions{})
	if res.Termination.Reason != Failed {
		t.Fatalf("got %s", res.Termination)
	}
	if strings.Contains(res.Termination.String(), token) || strings.Contains(res.Termination.Err.Error(), token) {
		t.Errorf("termination shows the token: %s / %v", res.Termination, res.Termination.Err)
	}
	if !strings.Contains(res.Termination.Detail, "[redacted]") {
		t.Errorf("detail %q: expected the token's place to be marked", res.Termination.Detail)
	}
	var pe *provider.Error
	if !errors.As(res.Termination.Err, &pe) {
		t.Errorf("errors.As lost the provider error: %#v", res.Termination.Err)
	}
	for _, ev := range rec.events {
		if strings.Contains(string(ev.Data), token) {
			t.Errorf("the token reached the observer in %s", ev.Type)
		}
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(journal.Path(e.StateDir(), res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), token) {
		t.Errorf("journal shows the token:\n%s", b)
	}
}

func TestRedactorJSON(t *testing.T) {
	var x redactor
	x.add("s<cr&t")
	x.add("1234")
	x.add("ab") // too short to redact
	for _, tc := range []struct{ in, want string }{
		{`{"a":"no secret here","b":2}`, `{"a":"no secret here","b":2}`},
		{`{"a":"x s\u003ccr\u0026t y"}`, `{"a":"x [redacted] y"}`},
		{`{"a":"x s<cr&t y"}`, `{"a":"x [redacted] y"}`},
		{`{"a":"\u0073<cr&t"}`, `{"a":"[redacted]"}`},
		{`{"pin":12345,"ab":"ab"}`, `{"ab":"ab","pin":"[redacted]"}`},
		{`["s<cr&t",{"s<cr&t":1}]`, `["[redacted]",{"[redacted]":1}]`},
		{`{"a":"\u003c not a secret"}`, `{"a":"\u003c not a secret"}`},
	} {
		got := string(x.json([]byte(tc.in)))
		if got != tc.want {
			t.Errorf("json(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("json(%s) = %s is not JSON", tc.in, got)
		}
	}
}

func TestRedactorStream(t *testing.T) {
	var x redactor
	if show, hold := x.stream("no secrets: shown at once"); show != "no secrets: shown at once" || hold != "" {
		t.Errorf("without secrets: %q %q", show, hold)
	}
	x.add("secret-value")
	x.add("sec2")
	var out strings.Builder
	held := ""
	for _, d := range []string{"a se", "cret-v", "alue and sec", "2 and se", "cond"} {
		show, hold := x.stream(held + d)
		if len(hold) >= len("secret-value") {
			t.Errorf("held %q, longer than the longest secret less one", hold)
		}
		out.WriteString(show)
		held = hold
	}
	out.WriteString(held)
	if want := "a [redacted] and [redacted] and second"; out.String() != want {
		t.Errorf("streamed %q, want %q", out.String(), want)
	}
}
