package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestLifecycleEvents: each model call's observers see model_first_event
// once, before the turn's pieces; a tool call's arguments arrive as
// tool_call_delta events with the call's index and tool, redacted as
// content is (a key split across pieces too), which put together are the
// call reasoning_complete journals; neither event is journalled, and
// reasoning_complete records the time to the first event.
func TestLifecycleEvents(t *testing.T) {
	const key = "sk-test-5f8e2a91c4"
	srv := fakeserver.New(t, fakeserver.WithReplies(
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", ArgumentChunks: []string{`{"expression":"6*7 `, `+ 0 # sk-te`, `st-5f8e2a91c4"}`}}}},
		fakeserver.Text("42"),
	), fakeserver.WithLatency(5*time.Millisecond))
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
	if res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	var firsts, calls int
	var args strings.Builder
	var name string
	for _, ev := range rec.events {
		if strings.Contains(ev.Delta, key) || strings.Contains(string(ev.Data), key) {
			t.Errorf("the key reached the observer in %s", ev.Type)
		}
		switch ev.Type {
		case journal.ModelCallStarted:
			calls++
		case ModelFirstEvent:
			firsts++
			var d journal.FirstEventData
			if json.Unmarshal(ev.Data, &d) != nil || d.Model != "model.m" {
				t.Errorf("model_first_event %s", ev.Data)
			}
			if firsts != calls {
				t.Errorf("model_first_event %d after %d model calls", firsts, calls)
			}
		case ToolCallDelta:
			if firsts != 1 {
				t.Errorf("a tool_call_delta before the call's first event")
			}
			var d journal.ToolCallDeltaData
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.Index != 0 {
				t.Errorf("tool_call_delta %s", ev.Data)
			}
			if d.Name != "" {
				name = d.Name
			}
			args.WriteString(ev.Delta)
		}
	}
	if firsts != 2 || calls != 2 {
		t.Errorf("%d first events for %d model calls", firsts, calls)
	}
	if name != "calculator" || args.String() != `{"expression":"6*7 + 0 # [redacted]"}` {
		t.Errorf("streamed call %s %s", name, args.String())
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	turns := 0
	for _, ev := range journalOf(t, e, res.RunID) {
		switch ev.Type {
		case journal.ModelFirstEvent, journal.ToolCallDelta:
			t.Errorf("%s was journalled", ev.Type)
		case journal.ReasoningComplete:
			var d journal.ReasoningCompleteData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.FirstEventMS < 5 {
				t.Errorf("reasoning_complete first_event_ms %d, want the server's latency at least", d.FirstEventMS)
			}
			turns++
		}
	}
	if turns != 2 {
		t.Errorf("%d turns journalled", turns)
	}
}
