package engine

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/symbi-dev/symbi/provider"
)

// redactedText replaces a secret wherever a run would show it.
const redactedText = "[redacted]"

// minSecretLen is the shortest value worth redacting: replacing "a" would
// shred every line and protect nothing.
const minSecretLen = 4

// redactor is the one place secrets are taken out of what the engine puts
// out: journal lines, events for the observer (the terminal, --json), the
// streamed answer, the Result, the dead-letter file, the knowledge a run
// persists, and every request to a model provider. Secrets are the values
// the engine resolved itself (API keys, env() values in tool and model
// settings), and it registers every one the plan can resolve before a run
// writes its first line (registerSecrets).
//
// A secret is found in any spelling redact_match.go describes (URL and JSON
// escapes, base64). Every event passes through it, so reading takes no
// lock: adding a secret (rare) publishes a new secretSet.
type redactor struct {
	mu  sync.Mutex // serialises add
	set atomic.Pointer[secretSet]
}

// secretSet is never changed once published.
type secretSet struct {
	secrets  []string
	patterns []pattern
	// byFirst lists the patterns by their first byte.
	byFirst [256][]int
	// starts are the bytes a match can begin with: a pattern's first byte
	// and the escapes that can spell one.
	starts [256]bool
}

// load returns the current secrets; nil when there are none.
func (x *redactor) load() *secretSet { return x.set.Load() }

func (x *redactor) add(s string) {
	if len(s) < minSecretLen {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old := x.load()
	if old == nil {
		old = &secretSet{}
	}
	for _, have := range old.secrets {
		if have == s {
			return
		}
	}
	x.set.Store(old.with(s))
}

func (old *secretSet) with(s string) *secretSet {
	x := &secretSet{
		secrets:  append(append([]string(nil), old.secrets...), s),
		patterns: append([]pattern(nil), old.patterns...),
	}
	seen := map[string]bool{}
	for _, p := range x.patterns {
		seen[string(p.b)] = true
	}
	for _, p := range patternsOf(s) {
		if !seen[string(p.b)] {
			seen[string(p.b)] = true
			x.patterns = append(x.patterns, p)
		}
	}
	x.starts['%'], x.starts['\\'] = true, true
	for i, p := range x.patterns {
		x.byFirst[p.b[0]] = append(x.byFirst[p.b[0]], i)
		x.starts[p.b[0]] = true
		if p.b[0] == ' ' {
			x.starts['+'] = true
		}
	}
	return x
}

// text replaces every secret in s.
func (x *redactor) text(s string) string {
	set := x.load()
	if set == nil {
		return s
	}
	out, _ := set.redact(s, false)
	return out
}

// redact replaces every match in t. With stream, a match that t ends
// inside of is not shown: held is t from its start, for the caller to
// complete with what comes next.
func (set *secretSet) redact(t string, stream bool) (out, held string) {
	var b []byte // nil until a secret is found
	last := 0
	for i := 0; i < len(t); i++ {
		if !set.starts[t[i]] {
			continue
		}
		end, p, o := set.matchAt(t, i)
		if o == partial && stream {
			t, held = t[:i], t[i:]
			break
		}
		if o != full {
			continue
		}
		from := i
		if p.base64 != 0 {
			// The neighbours carry a few of the secret's bits.
			if from > last && inBase64(p.base64, t[from-1]) {
				from--
			}
			if end < len(t) && inBase64(p.base64, t[end]) {
				end++
			}
			for k := 0; k < 2 && end < len(t) && t[end] == '='; k++ {
				end++
			}
		}
		b = append(b, t[last:from]...)
		b = append(b, redactedText...)
		last, i = end, end-1
	}
	if b == nil {
		return t, held
	}
	return string(append(b, t[last:]...)), held
}

// matchAt is the longest match of any pattern at t[i]; partial when none
// matches but t ends inside what could become one.
func (set *secretSet) matchAt(t string, i int) (end int, p *pattern, outcome int) {
	var first [3]byte
	n, isPartial := firstBytes(t, i, &first)
	if isPartial {
		return 0, nil, partial
	}
	for _, c := range first[:n] {
		for _, k := range set.byFirst[c] {
			e, o := matchAt(t, i, set.patterns[k].b)
			switch {
			case o == full && (outcome != full || e > end):
				end, p, outcome = e, &set.patterns[k], full
			case o == partial && outcome == noMatch:
				outcome = partial
			}
		}
	}
	return end, p, outcome
}

// err returns err with its message redacted; errors.Is and errors.As still
// see the original chain.
func (x *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := x.text(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// json redacts an encoded JSON value and keeps it valid and in its order:
// each string (member names included) whose text, decoded, holds a secret
// is encoded again with the secret as [redacted], and a bare number that
// holds one (a PIN) becomes the string "[redacted]". Everything else is
// left as it is, byte for byte, and a value without a trace of a secret is
// returned itself. Text that is not JSON (it always is, from record) is
// redacted as text.
func (x *redactor) json(b []byte) []byte {
	set := x.load()
	if set == nil {
		return b
	}
	return set.json(b)
}

func (set *secretSet) json(b []byte) []byte {
	var out []byte // nil until a secret is found
	last := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '"':
			end := stringEnd(b, i)
			if end < 0 {
				s, _ := set.redact(string(b), false) // not JSON
				return []byte(s)
			}
			if repl, ok := set.redactString(b[i:end]); ok {
				out = append(append(out, b[last:i]...), repl...)
				last = end
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(b) && isNumberByte(b[j]) {
				j++
			}
			if s, _ := set.redact(string(b[i:j]), false); s != string(b[i:j]) {
				out = append(append(out, b[last:i]...), `"`+redactedText+`"`...)
				last = j
			}
			i = j
		case c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			lit := literalAt(b, i)
			if lit == 0 {
				// Not JSON: every byte may belong to a secret.
				s, _ := set.redact(string(b), false)
				return []byte(s)
			}
			i += lit
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// literalAt is the length of the JSON literal at b[i], 0 for none.
func literalAt(b []byte, i int) int {
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return len(lit)
		}
	}
	return 0
}

// redactString redacts one JSON string token, quotes included.
func (set *secretSet) redactString(tok []byte) ([]byte, bool) {
	inner := tok[1 : len(tok)-1]
	var s string
	if bytes.IndexByte(inner, '\\') < 0 {
		s = string(inner)
	} else if json.Unmarshal(tok, &s) != nil {
		s = string(inner)
	}
	clean, _ := set.redact(s, false)
	if clean == s {
		return nil, false
	}
	out, err := json.Marshal(clean)
	if err != nil {
		return []byte(`"` + redactedText + `"`), true
	}
	return out, true
}

// stringEnd is the index after the JSON string that starts at b[i], or -1
// when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		escaped := false
		for m := j - 1; m > i && b[m] == '\\'; m-- {
			escaped = !escaped
		}
		if !escaped {
			return j + 1
		}
		j++
	}
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// stream redacts the text streamed so far that has not been shown (held
// plus the new delta) and splits it into what may be shown now and a tail
// to hold back: from the first place where the text ends inside what could
// still become a secret, in any spelling, which the next delta may
// complete.
func (x *redactor) stream(s string) (show, hold string) {
	set := x.load()
	if set == nil {
		return s, ""
	}
	return set.redact(s, true)
}

// messages is msgs as a provider may see them: every secret in a
// message's content, a tool call's name and arguments, and a tool
// result's name replaced. A tool's output, an input or an answer that
// holds a secret never leaves the process in a model request. msgs itself
// is returned when nothing changed, so the common case copies nothing.
func (x *redactor) messages(msgs []provider.Message) []provider.Message {
	set := x.load()
	if set == nil {
		return msgs
	}
	var out []provider.Message
	for i, m := range msgs {
		c, changed := set.message(m)
		if changed && out == nil {
			out = append(make([]provider.Message, 0, len(msgs)), msgs[:i]...)
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// message redacts one message; m's tool calls are copied, not changed.
func (set *secretSet) message(m provider.Message) (provider.Message, bool) {
	changed := false
	text := func(s string) string {
		c, _ := set.redact(s, false)
		changed = changed || c != s
		return c
	}
	m.Content = text(m.Content)
	m.Name = text(m.Name)
	var calls []provider.ToolCall
	for i, c := range m.ToolCalls {
		args := c.Arguments
		if json.Valid([]byte(args)) {
			args = string(set.json([]byte(args)))
		} else {
			args = text(args)
		}
		name := text(c.Name)
		if args != c.Arguments || name != c.Name {
			if calls == nil {
				calls = slices.Clone(m.ToolCalls)
			}
			calls[i].Arguments, calls[i].Name = args, name
		}
	}
	if calls != nil {
		m.ToolCalls, changed = calls, true
	}
	return m, changed
}
