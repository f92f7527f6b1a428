package msgkey

import "github.com/symbi-dev/symbi/provider"

// Key is what the engine's per-message caches read of a message: its
// content, name and tool calls.
type Key struct {
	content, name string
	ncalls        int
	// call is the only tool call's name and arguments (the usual case,
	// kept without an allocation); calls a copy of two or more (the
	// message's may change in place).
	call  [2]string
	calls []provider.ToolCall
}

// Of is m's key.
func Of(m provider.Message) Key {
	k := Key{content: m.Content, name: m.Name, ncalls: len(m.ToolCalls)}
	switch len(m.ToolCalls) {
	case 0:
	case 1:
		k.call = [2]string{m.ToolCalls[0].Name, m.ToolCalls[0].Arguments}
	default:
		k.calls = append([]provider.ToolCall(nil), m.ToolCalls...)
	}
	return k
}

// Is reports whether m is the message k was made of, or one equal to it in
// everything a key holds. Strings with the same data compare by pointer
// first, so an unchanged message costs no byte comparison.
func (k *Key) Is(m provider.Message) bool {
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
