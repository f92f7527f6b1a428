package engine

import (
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestReasoningIsStreamedAndJournalled: the reasoning a model sends apart
// from its answer reaches the observer as ReasoningDelta events, all before
// the answer's first delta, redacted like the answer (a key split across
// two pieces too), and reasoning_complete journals it whole; a stream that
// ended with [DONE] but no finish reason is journalled as such.
func TestReasoningIsStreamedAndJournalled(t *testing.T) {
	const key = "sk-test-5f8e2a91c4"
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Reply{
		ReasoningChunks: []string{"the key sk-te", "st-5f8e2a91c4 is not needed; ", "6 times 7"},
		ReasoningAs:     fakeserver.ReasoningText,
		Chunks:          []string{"4", "2"},
		NoFinishReason:  true,
	}))
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
	res := mustRun(t, e, "a", "6*7?", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "42" {
		t.Fatalf("got %s, answer %q", res.Termination, res.Answer)
	}
	const want = "the key [redacted] is not needed; 6 times 7"
	var reasoning, content strings.Builder
	for _, ev := range rec.events {
		if strings.Contains(ev.Delta, key) || strings.Contains(string(ev.Data), key) {
			t.Errorf("the key reached the observer in %s", ev.Type)
		}
		switch ev.Type {
		case ReasoningDelta:
			if content.Len() > 0 {
				t.Errorf("reasoning %q after the answer began", ev.Delta)
			}
			reasoning.WriteString(ev.Delta)
		case ContentDelta:
			content.WriteString(ev.Delta)
		}
	}
	if reasoning.String() != want || content.String() != "42" {
		t.Errorf("streamed reasoning %q, content %q; want %q, %q", reasoning.String(), content.String(), want, "42")
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	var turn journal.ReasoningCompleteData
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type == journal.ReasoningComplete {
			if err := ev.Decode(&turn); err != nil {
				t.Fatal(err)
			}
		}
	}
	if turn.Reasoning != want || turn.Content != "42" || !turn.FinishReasonMissing || turn.FinishReason != "" {
		t.Errorf("reasoning_complete %+v", turn)
	}
}

// A quiet run (a candidate, a delegation) shows no reasoning, and still
// journals it.
func TestQuietRunShowsNoReasoning(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithReplies(fakeserver.Reply{Reasoning: "hmm", Chunks: []string{"42"}}))
	p, dir := fixture{"main.hcl": openaiHCL(srv.URL())}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "a", "6*7?", RunOptions{Quiet: true})
	for _, ev := range rec.events {
		if ev.Type == ReasoningDelta || ev.Type == ContentDelta {
			t.Errorf("a quiet run showed %s %q", ev.Type, ev.Delta)
		}
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range journalOf(t, e, res.RunID) {
		found = found || (ev.Type == journal.ReasoningComplete && strings.Contains(string(ev.Data), `"reasoning":"hmm"`))
	}
	if !found {
		t.Error("the reasoning is not in the journal")
	}
}
