package engine

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/convo"
	"github.com/symbi-dev/symbi/provider"
)

// TestTokenCache checks the cached estimates against fresh ones while a
// conversation is appended to, fitted (messages dropped), changed in place
// and replaced.
func TestTokenCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	text := func() string { return strings.Repeat("é", rng.IntN(5)) + strings.Repeat("x", rng.IntN(40)) }
	msg := func() provider.Message {
		m := provider.Message{Role: provider.User, Content: text()}
		switch rng.IntN(3) {
		case 0:
			m.Role = provider.Assistant
			for range rng.IntN(3) {
				m.ToolCalls = append(m.ToolCalls, provider.ToolCall{ID: strconv.Itoa(rng.IntN(9)), Name: text(), Arguments: text()})
			}
		case 1:
			m.Role, m.Name, m.ToolCallID = provider.ToolRole, text(), "c"
		}
		return m
	}
	var c tokenCache
	var conv []provider.Message
	for step := range 3000 {
		switch k := rng.IntN(10); {
		case k < 5 || len(conv) < 2:
			conv = append(conv, msg())
		case k == 5: // drop from the front or the middle, into a new slice
			i := rng.IntN(len(conv))
			j := i + 1 + rng.IntN(len(conv)-i)
			conv = append(append([]provider.Message(nil), conv[:i]...), conv[j:]...)
		case k == 6: // change a message in place
			i := rng.IntN(len(conv))
			conv[i].Content = text()
		case k == 7: // change a tool call in place
			i := rng.IntN(len(conv))
			if len(conv[i].ToolCalls) > 0 {
				conv[i].ToolCalls[0].Arguments = text()
			}
		case k == 8: // insert in the middle
			i := rng.IntN(len(conv))
			conv = append(conv[:i], append([]provider.Message{msg()}, conv[i:]...)...)
		default:
			if rng.IntN(20) == 0 {
				conv = nil
			}
		}
		got := c.tokens(conv)
		if len(got) != len(conv) {
			t.Fatalf("step %d: %d estimates for %d messages", step, len(got), len(conv))
		}
		for i, m := range conv {
			if got[i] != convo.MessageTokens(m) {
				t.Fatalf("step %d: message %d: cached %d, MessageTokens %d", step, i, got[i], convo.MessageTokens(m))
			}
		}
		if got, want := c.estimate(conv), estimateMessages(conv); got != want {
			t.Fatalf("step %d: cached estimate %d, estimateMessages %d", step, got, want)
		}
	}
}

// TestDataEncoderIsMarshal checks that record's reused encoder writes the
// bytes json.Marshal writes, event after event.
func TestDataEncoderIsMarshal(t *testing.T) {
	d := dataEncoders.Get().(*dataEncoder)
	defer dataEncoders.Put(d)
	values := []any{
		reasoningData{Message: provider.Message{Role: provider.Assistant, Content: "<a & b>\u2028 \"q\"\n", ToolCalls: []provider.ToolCall{{ID: "1", Name: "calc", Arguments: `{"x":1}`}}}},
		observationsData{Messages: []provider.Message{{Role: provider.ToolRole, Content: "42", Name: "calc", ToolCallID: "1"}}},
		map[string]any{"raw": json.RawMessage(`{ "a" : [1, 2] }`), "s": "x\xffy"},
		strings.Repeat("long ", 20000),
		"short",
		nil,
	}
	for i, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.encode(v)
		if err != nil || string(got) != string(want) {
			t.Fatalf("value %d: encode gave %q, %v; json.Marshal %q", i, got, err, want)
		}
	}
	if _, err := d.encode(func() {}); err == nil {
		t.Fatal("encoding a func did not fail")
	}
}
