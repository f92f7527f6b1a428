package engine

import (
	"github.com/symbi-dev/symbi/convo"
	"github.com/symbi-dev/symbi/provider"
)

// tokenCache remembers the token estimates of the messages of the last
// conversation it was given: each message's convo.MessageTokens (for
// context fitting) and its share of estimateMessages (for the budget's
// preflight). A react run's conversation grows by appending, so each message
// is estimated once rather than on every iteration. Every cached message is
// compared to the one it stands for, field by field on what the estimates
// read (strings with the same data compare by pointer), so a conversation
// that was changed in place, refitted or replaced gets fresh estimates for
// whatever differs.
type tokenCache struct {
	keys []tokenKey
	fit  []int   // convo.MessageTokens of each message
	est  []int64 // each message's part of estimateMessages
}

// tokenKey is what the estimates of a message depend on.
type tokenKey struct {
	content, name string
	ncalls        int
	// call is the only tool call's name and arguments (the usual case,
	// kept without an allocation); calls a copy of two or more (the
	// message's may change in place).
	call  [2]string
	calls []provider.ToolCall
}

func keyOf(m provider.Message) tokenKey {
	k := tokenKey{content: m.Content, name: m.Name, ncalls: len(m.ToolCalls)}
	switch len(m.ToolCalls) {
	case 0:
	case 1:
		k.call = [2]string{m.ToolCalls[0].Name, m.ToolCalls[0].Arguments}
	default:
		k.calls = append([]provider.ToolCall(nil), m.ToolCalls...)
	}
	return k
}

func (k *tokenKey) is(m provider.Message) bool {
	if k.content != m.Content || k.name != m.Name || k.ncalls != len(m.ToolCalls) {
		return false
	}
	if k.ncalls == 1 {
		return k.call[0] == m.ToolCalls[0].Name && k.call[1] == m.ToolCalls[0].Arguments
	}
	for i, c := range m.ToolCalls {
		if k.calls[i].Name != c.Name || k.calls[i].Arguments != c.Arguments {
			return false
		}
	}
	return true
}

// update makes the cache describe msgs. Messages dropped from the front or
// the middle (a fitted conversation) are skipped over rather than
// re-estimated after them.
func (c *tokenCache) update(msgs []provider.Message) {
	i := 0
	for i < len(msgs) {
		if i < len(c.keys) && c.keys[i].is(msgs[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(c.keys) && !c.keys[j].is(msgs[i]) {
			j++
		}
		if j >= len(c.keys) {
			break
		}
		c.keys = append(c.keys[:i], c.keys[j:]...)
		c.fit = append(c.fit[:i], c.fit[j:]...)
		c.est = append(c.est[:i], c.est[j:]...)
	}
	clear(c.keys[i:]) // let go of the strings of what is no longer cached
	c.keys, c.fit, c.est = c.keys[:i], c.fit[:i], c.est[:i]
	for ; i < len(msgs); i++ {
		m := msgs[i]
		c.keys = append(c.keys, keyOf(m))
		c.fit = append(c.fit, convo.MessageTokens(m))
		c.est = append(c.est, estimateMessages(msgs[i:i+1]))
	}
}

// tokens returns convo.MessageTokens of each of msgs, for convo.FitTokens.
// The slice is the cache's: it is valid until the next update.
func (c *tokenCache) tokens(msgs []provider.Message) []int {
	c.update(msgs)
	return c.fit
}

// estimate is estimateMessages(msgs).
func (c *tokenCache) estimate(msgs []provider.Message) int64 {
	c.update(msgs)
	return c.sum()
}

// sum is estimateMessages of the conversation of the last update.
func (c *tokenCache) sum() int64 {
	var n int64
	for _, e := range c.est {
		n += e
	}
	return n
}
