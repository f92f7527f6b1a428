package openai

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
)

func requestModel(t *testing.T) *Model {
	t.Helper()
	m, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// wireOf is chatRequest on a model with nothing cached.
func wireOf(t *testing.T, req provider.Request) goopenai.ChatCompletionRequest {
	t.Helper()
	out, _, err := requestModel(t).chatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func growingConversation(n int, tag string) []provider.Message {
	msgs := []provider.Message{{Role: provider.System, Content: "sys " + tag}, {Role: provider.User, Content: "task " + tag}}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			provider.Message{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: id, Name: "calc", Arguments: fmt.Sprintf(`{"x":%d}`, i)}}},
			provider.Message{Role: provider.ToolRole, ToolCallID: id, Content: tag + id})
	}
	return msgs
}

var requestTools = []provider.ToolSpec{{Name: "calc", Description: "adds", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "clock"}}

// The cache of the last request changes nothing on the wire: every request
// of a growing conversation is what a fresh model would send, and the
// unchanged prefix is reused rather than converted again.
func TestChatRequestReusesThePreviousPrefix(t *testing.T) {
	m := requestModel(t)
	var prev goopenai.ChatCompletionRequest
	for n := range 6 {
		req := provider.Request{Messages: growingConversation(n, "a"), Tools: requestTools, ToolChoice: "calc"}
		got, _, err := m.chatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wireOf(t, req), got); diff != "" {
			t.Fatalf("turn %d differs from a fresh conversion (-want +got):\n%s", n, diff)
		}
		if n > 1 {
			if &got.Messages[2].ToolCalls[0] != &prev.Messages[2].ToolCalls[0] {
				t.Errorf("turn %d: the unchanged prefix was converted again", n)
			}
			if &got.Messages[0] != &prev.Messages[0] {
				t.Errorf("turn %d: the conversation was copied instead of extended in place", n)
			}
			if &got.Tools[0] != &prev.Tools[0] {
				t.Errorf("turn %d: the unchanged tools were converted again", n)
			}
		}
		prev = got
	}
}

// Requests handed out earlier never change, whatever later requests append
// or replace: a conversation that diverges from the cached one gets its own
// slice.
func TestChatRequestLeavesEarlierRequestsAlone(t *testing.T) {
	m := requestModel(t)
	type sent struct {
		req provider.Request
		got goopenai.ChatCompletionRequest
	}
	var all []sent
	send := func(msgs []provider.Message) {
		req := provider.Request{Messages: msgs, Tools: requestTools}
		got, _, err := m.chatRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{req, got})
	}
	for n := range 5 {
		send(growingConversation(n, "a"))
	}
	send(growingConversation(2, "a"))                                                                 // shorter: a prefix of the cache
	send(growingConversation(3, "b"))                                                                 // different from the start
	send(append(growingConversation(2, "a"), provider.Message{Role: provider.User, Content: "fork"})) // diverges after a prefix
	send(growingConversation(4, "a"))
	send(growingConversation(6, "a"))
	for i, s := range all {
		if diff := cmp.Diff(wireOf(t, s.req), s.got); diff != "" {
			t.Errorf("request %d changed after it was made (-want +got):\n%s", i, diff)
		}
	}
}

// A conversation edited in place, tools that change and a request with
// other messages are converted anew: reuse is by content, never by slice.
func TestChatRequestSeesEditsInPlace(t *testing.T) {
	m := requestModel(t)
	msgs := growingConversation(3, "a")
	req := provider.Request{Messages: msgs, Tools: requestTools}
	if _, _, err := m.chatRequest(req); err != nil {
		t.Fatal(err)
	}
	msgs[1].Content = "edited"
	msgs[4].ToolCalls[0].Arguments = `{"x":"edited"}`
	tools := append([]provider.ToolSpec(nil), requestTools...)
	tools[1].Description = "tells the time"
	req = provider.Request{Messages: msgs, Tools: tools}
	got, _, err := m.chatRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wireOf(t, req), got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// A cached message does not excuse an invalid one at the same place.
	bad := append([]provider.Message(nil), msgs...)
	bad[3] = provider.Message{Role: provider.ToolRole, Content: "no id"}
	if _, _, err := m.chatRequest(provider.Request{Messages: bad}); err == nil {
		t.Error("a tool message without tool_call_id was accepted")
	}
	// No messages stays null on the wire.
	if got, _, _ := m.chatRequest(provider.Request{}); got.Messages != nil {
		t.Errorf("messages %v, want nil", got.Messages)
	}
}

// Run with -race: concurrent requests of different conversations through one
// model each get their own conversation.
func TestChatRequestConcurrent(t *testing.T) {
	m := requestModel(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := fmt.Sprint(g)
			for n := range 20 {
				req := provider.Request{Messages: growingConversation(n, tag), Tools: requestTools[:1+g%2]}
				got, _, err := m.chatRequest(req)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(wireOf(t, req), got); diff != "" {
					t.Errorf("goroutine %d turn %d (-want +got):\n%s", g, n, diff)
					return
				}
			}
		}()
	}
	wg.Wait()
}
