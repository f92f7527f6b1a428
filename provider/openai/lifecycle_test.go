package openai

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// TestLifecycleEvents: a provider says when the response's first event
// arrived (Started, before any piece), and hands every piece of every tool
// call to onEvent with the call's index, its id and name in its first
// piece: the pieces of each call put together are the call the response
// returns, streamed or not.
func TestLifecycleEvents(t *testing.T) {
	calls := []fakeserver.ToolCall{
		{ID: "call_a", Name: "search", ArgumentChunks: []string{`{"query":`, `"otters"}`}},
		{ID: "call_b", Name: "calculator", Arguments: `{"expression":"6*7"}`},
	}
	for _, streaming := range []bool{true, false} {
		s := newSetup(t, func(c *Config) { c.Streaming = streaming }, fakeserver.Reply{ToolCalls: calls})
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		var events []provider.Event
		resp, err := s.model.Stream(ctx, ask("x"), func(e provider.Event) { events = append(events, e) })
		if err != nil {
			t.Fatalf("streaming=%v: %v", streaming, err)
		}
		if len(events) == 0 || !events[0].Started {
			t.Fatalf("streaming=%v: the first event is not Started: %+v", streaming, events)
		}
		type call struct{ ID, Name, Arguments string }
		var got []call
		for _, e := range events[1:] {
			if e.Started {
				t.Errorf("streaming=%v: Started twice", streaming)
			}
			p := e.ToolCall
			if p == nil {
				continue
			}
			for len(got) <= p.Index {
				got = append(got, call{})
			}
			if p.ID != "" {
				got[p.Index].ID = p.ID
			}
			if p.Name != "" {
				if got[p.Index].Name != "" || got[p.Index].Arguments != "" {
					t.Errorf("streaming=%v: the name of call %d came after its first piece", streaming, p.Index)
				}
				got[p.Index].Name = p.Name
			}
			got[p.Index].Arguments += p.Arguments
		}
		var want []call
		for _, c := range resp.ToolCalls {
			want = append(want, call{c.ID, c.Name, c.Arguments})
		}
		if len(want) != 2 {
			t.Fatalf("streaming=%v: response calls %+v", streaming, resp.ToolCalls)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("streaming=%v: the pieces put together (-want +got):\n%s", streaming, diff)
		}
	}
}
