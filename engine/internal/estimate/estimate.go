package estimate

import (
	"github.com/symbi-dev/symbi/convo"
	"github.com/symbi-dev/symbi/engine/internal/msgkey"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

// Cache remembers the token estimates of the messages of the last
// conversation it was given: each message's convo.MessageTokens, which
// context fitting and the budget's preflight (Messages) both count. A react run's conversation grows by appending, so each message
// is estimated once rather than on every iteration. Every cached message is
// compared to the one it stands for, field by field on what the estimates
// read (strings with the same data compare by pointer), so a conversation
// that was changed in place, refitted or replaced gets fresh estimates for
// whatever differs.
type Cache struct {
	keys []msgkey.Key
	fit  []int // convo.MessageTokens of each message
}

// Update makes the cache describe msgs. Messages dropped from the front or
// the middle (a fitted conversation) are skipped over rather than
// re-estimated after them.
func (c *Cache) Update(msgs []provider.Message) {
	i := 0
	for i < len(msgs) {
		if i < len(c.keys) && c.keys[i].Is(msgs[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(c.keys) && !c.keys[j].Is(msgs[i]) {
			j++
		}
		if j >= len(c.keys) {
			break
		}
		c.keys = append(c.keys[:i], c.keys[j:]...)
		c.fit = append(c.fit[:i], c.fit[j:]...)
	}
	clear(c.keys[i:]) // let go of the strings of what is no longer cached
	c.keys, c.fit = c.keys[:i], c.fit[:i]
	for ; i < len(msgs); i++ {
		m := msgs[i]
		c.keys = append(c.keys, msgkey.Of(m))
		c.fit = append(c.fit, convo.MessageTokens(m))
	}
}

// Tokens returns convo.MessageTokens of each of msgs, for convo.FitTokens.
// The slice is the cache's: it is valid until the next Update.
func (c *Cache) Tokens(msgs []provider.Message) []int {
	c.Update(msgs)
	return c.fit
}

// Estimate is Messages(msgs).
func (c *Cache) Estimate(msgs []provider.Message) int64 {
	c.Update(msgs)
	return c.Sum()
}

// Sum is Messages of the conversation of the last update.
func (c *Cache) Sum() int64 {
	var n int64
	for _, e := range c.fit {
		n += int64(e)
	}
	return n
}

// Messages and Tools are the preflight token estimate of a request: what
// the budget reserves before a model call. A conversation is estimated as
// context fitting counts it (convo.MessageTokens), so the budget and the
// context window agree on what a message costs.
func Messages(msgs []provider.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(convo.MessageTokens(m))
	}
	return n
}

func Tools(tools []provider.ToolSpec) int64 {
	var n int64
	for _, t := range tools {
		n += int64(stdlib.EstimateTokens(t.Name) + stdlib.EstimateTokens(t.Description) + stdlib.EstimateTokens(string(t.Parameters)))
	}
	return n
}
