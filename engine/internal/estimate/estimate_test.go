package estimate

import (
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
	var c Cache
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
		got := c.Tokens(conv)
		if len(got) != len(conv) {
			t.Fatalf("step %d: %d estimates for %d messages", step, len(got), len(conv))
		}
		for i, m := range conv {
			if got[i] != convo.MessageTokens(m) {
				t.Fatalf("step %d: message %d: cached %d, MessageTokens %d", step, i, got[i], convo.MessageTokens(m))
			}
		}
		if got, want := c.Estimate(conv), Messages(conv); got != want {
			t.Fatalf("step %d: cached estimate %d, Messages %d", step, got, want)
		}
	}
}
