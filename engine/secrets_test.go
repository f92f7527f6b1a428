package engine

import (
	"errors"
	"net/url"
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

// TestSecretsRegisteredBeforeTheFirstLine quotes the model's key and a
// tool's env() token in a run's input: both were unknown to the redactor
// until the model was built and the tool called, after the started event.
// Neither may show in the journal, the events or the request the model
// gets.
func TestSecretsRegisteredBeforeTheFirstLine(t *testing.T) {
	const key, token = "sk-first-5f8e2a91c4", "tok-first-0b7a9c"
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Text("noted")))
	hcl := strings.Replace(openaiHCL(srv.URL()), `name     = "fake-model"`, `name     = "fake-model"
  api_key_env = "FAKE_KEY"`, 1) + `
tool "lookup" {
  description = "never called"
  http {
    url     = "http://127.0.0.1:1/lookup"
    headers = { Authorization = "Bearer ${env("TOKEN")}" }
  }
}
`
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	e, rec := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) {
			switch n {
			case "FAKE_KEY":
				return key, true
			case "TOKEN":
				return token, true
			}
			return "", false
		}
	})
	res := mustRun(t, e, "a", "my key is "+key+" and my token "+url.QueryEscape(token), RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	if len(rec.events) == 0 || rec.events[0].Type != journal.Started || !strings.Contains(string(rec.events[0].Data), "my key is [redacted] and my token [redacted]") {
		t.Errorf("first event: %+v", rec.events)
	}
	for _, ev := range rec.events {
		if strings.Contains(string(ev.Data), key) || strings.Contains(string(ev.Data), token) {
			t.Errorf("%s shows a secret: %s", ev.Type, ev.Data)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || strings.Contains(string(reqs[0].Body), key) || strings.Contains(string(reqs[0].Body), token) || !strings.Contains(string(reqs[0].Body), "my key is [redacted]") {
		t.Errorf("the model got: %s", reqs[0].Body)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("the key must still reach the provider in its header: %q", got)
	}
}
