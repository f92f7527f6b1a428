package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/symbi-dev/symbi/engine/internal/msgkey"
	"github.com/symbi-dev/symbi/provider"
)

// redactedText replaces a secret wherever a run would show it.
const redactedText = "[redacted]"

// minSecretLen is the shortest value worth redacting: replacing "a" would
// shred every line and protect nothing.
const minSecretLen = 4

// Redactor is the one place secrets are taken out of what the engine puts
// out: journal lines, events for the observer (the terminal, --json), the
// streamed answer, the Result, the dead-letter file, the knowledge a run
// persists, and every request to a model provider. Secrets are the values
// the engine resolved itself (API keys, env() values in tool and model
// settings), and it registers every one the plan can resolve before a run
// writes its first line (the engine's registerSecrets).
//
// A secret is found in any spelling match.go describes (URL and JSON
// escapes, base64). Every event passes through it, so reading takes no
// lock: adding a secret (rare) publishes a new secretSet.
type Redactor struct {
	mu  sync.Mutex // serialises Add
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
	// inPattern are the bytes of every pattern.
	inPattern [256]bool
	// pairs holds, as bits, each pattern's first two bytes, and each first
	// byte followed by an escape: a byte that begins no escape starts a
	// match only when the next byte is such a pair's second.
	pairs [256 * 256 / 64]uint64
}

// pair reports whether c followed by d may begin a match.
func (set *secretSet) pair(c, d byte) bool {
	k := int(c)<<8 | int(d)
	return set.pairs[k/64]&(1<<(k%64)) != 0
}

func (set *secretSet) addPair(c, d byte) {
	k := int(c)<<8 | int(d)
	set.pairs[k/64] |= 1 << (k % 64)
}

// escapeByte reports whether c may begin an escape the matcher reads.
func escapeByte(c byte) bool { return c == '%' || c == '\\' || c == '+' }

// load returns the current secrets; nil when there are none.
func (x *Redactor) load() *secretSet { return x.set.Load() }

func (x *Redactor) Add(s string) {
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
		c := p.b[0]
		x.byFirst[c] = append(x.byFirst[c], i)
		x.starts[c] = true
		if c == ' ' {
			x.starts['+'] = true
		}
		for _, b := range p.b {
			x.inPattern[b] = true
		}
		x.addPair(c, p.b[1])
		x.addPair(c, '%')
		x.addPair(c, '\\')
		x.addPair(c, '+')
	}
	return x
}

// text replaces every secret in s.
func (x *Redactor) Text(s string) string {
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
	if !stream && set.cleanString(t) {
		return t, ""
	}
	b, h, _ := replaced(set, t, stream)
	if b == nil {
		return t[:h], t[h:]
	}
	return string(b), t[h:]
}

// replaced is t with every match replaced, nil when there is none (the
// common case, which allocates nothing). t is read up to h: with stream, h
// is where a match that t ends inside of begins (len(t) when none).
// reescaped reports a JSON escape in t that spells a byte which begins
// another escape ("\\\\", "\\u0025"): text that is a JSON string's inside
// must then be decoded and read again (redactString).
func replaced[T text](set *secretSet, t T, stream bool) (out []byte, h int, reescaped bool) {
	last, h := 0, len(t)
	var first [3]byte
	for i := 0; i < h; i++ {
		c := t[i]
		n, isPartial := 1, false
		if escapeByte(c) {
			n, isPartial = firstBytes(t, i, &first)
			if c == '\\' && n == 2 && escapeByte(first[1]) {
				reescaped = true
			}
			if !isPartial && !set.startsAny(first[:n]) {
				continue
			}
		} else if !set.starts[c] || i+1 < len(t) && !set.pair(c, t[i+1]) {
			continue
		}
		first[0] = c
		end, p, o := matchSet(set, t, i, first[:n], isPartial)
		if o == partial && stream {
			h = i
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
		out = append(out, t[last:from]...)
		out = append(out, redactedText...)
		last, i = end, end-1
	}
	if out == nil {
		return nil, h, reescaped
	}
	return append(out, t[last:h]...), h, reescaped
}

// startsAny reports whether a pattern begins with one of bs.
func (set *secretSet) startsAny(bs []byte) bool {
	for _, b := range bs {
		if len(set.byFirst[b]) > 0 {
			return true
		}
	}
	return false
}

// matchSet is the longest match at t[i] of any pattern that begins with
// one of first (the bytes t[i] may spell, firstBytes); partial when none
// matches but t ends inside what could become one, as it does inside an
// escape (escapeEnds).
func matchSet[T text](set *secretSet, t T, i int, first []byte, escapeEnds bool) (end int, p *pattern, outcome int) {
	if escapeEnds {
		return 0, nil, partial
	}
	for _, c := range first {
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
func (x *Redactor) Err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := x.Text(msg); clean != msg {
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
func (x *Redactor) JSON(b []byte) []byte {
	set := x.load()
	if set == nil {
		return b
	}
	return set.json(b)
}

func (set *secretSet) json(b []byte) []byte {
	if set.cleanBytes(b) {
		return b
	}
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
			if r, _, _ := replaced(set, b[i:j], false); r != nil {
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

// cleanString and cleanBytes are surelyClean for strings and bytes.
func (set *secretSet) cleanString(t string) bool {
	return surelyClean(set, t, func(t string, p *pattern) int { return strings.Index(t, p.s) }, strings.IndexByte)
}

func (set *secretSet) cleanBytes(t []byte) bool {
	return surelyClean(set, t, func(t []byte, p *pattern) int { return bytes.Index(t, p.b) }, bytes.IndexByte)
}

// redactString redacts one JSON string token, quotes included. The
// matcher reads JSON escapes itself, so the token is decoded only when a
// secret is found in it, or when an escape spells a byte that starts
// another encoding ("\\\\" or "\\u0025" for "\\" or "%"): the text it
// decodes to must then be read again.
func (set *secretSet) redactString(tok []byte) ([]byte, bool) {
	inner := tok[1 : len(tok)-1]
	found, _, reescaped := replaced(set, inner, false)
	if found == nil && !reescaped {
		return nil, false
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		// Not a valid string (a bad escape): its raw text, redacted.
		if found == nil {
			return nil, false
		}
		return append(append([]byte{'"'}, found...), '"'), true
	}
	clean, _ := set.redact(s, false)
	if clean == s {
		return nil, false
	}
	return encodeString(clean), true
}

// encodeString is s as a JSON string, with <, > and & as themselves (a
// dead letter writes its arguments so; the journal reads either).
func encodeString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
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
func (x *Redactor) Stream(s string) (show, hold string) {
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
func (x *Redactor) Messages(msgs []provider.Message) []provider.Message {
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
	content, c1 := set.changed(m.Content)
	name, c2 := set.changed(m.Name)
	m.Content, m.Name = content, name
	var calls []provider.ToolCall
	for i, c := range m.ToolCalls {
		args, c3 := set.arguments(c.Arguments)
		name, c4 := set.changed(c.Name)
		if c3 || c4 {
			if calls == nil {
				calls = slices.Clone(m.ToolCalls)
			}
			calls[i].Arguments, calls[i].Name = args, name
		}
	}
	if calls != nil {
		m.ToolCalls = calls
	}
	return m, c1 || c2 || calls != nil
}

// changed is s redacted, and whether that changed it.
func (set *secretSet) changed(s string) (string, bool) {
	if set.cleanString(s) {
		return s, false
	}
	b, _, _ := replaced(set, s, false)
	if b == nil {
		return s, false
	}
	return string(b), true
}

// arguments redacts a tool call's arguments, as JSON when they are JSON
// (so they stay valid), else as text.
func (set *secretSet) arguments(args string) (string, bool) {
	if set.cleanString(args) {
		return args, false
	}
	found, _, reescaped := replaced(set, args, false)
	if found == nil && !reescaped {
		return args, false
	}
	if b := []byte(args); json.Valid(b) {
		clean := set.json(b)
		return string(clean), !bytes.Equal(clean, b)
	}
	if found == nil {
		return args, false
	}
	return string(found), true
}

// RequestCache remembers which messages of a run's last model request
// held no secret, and under which secrets. A react run's conversation grows
// by appending, so each message is read once rather than on every model
// call. The cache is kept in step with the conversation as the token
// estimates are (estimate.Cache.Update: strings with the same data compare by
// pointer, and messages dropped by context fitting are skipped over), so a
// message changed in place or replaced is read again; a new secret empties
// it.
type RequestCache struct {
	set   *secretSet
	keys  []msgkey.Key
	clean []bool // clean[i]: the message of keys[i] holds no secret
}

// Messages is x.Messages(msgs), reading only the messages the cache does
// not know.
func (c *RequestCache) Messages(x *Redactor, msgs []provider.Message) []provider.Message {
	set := x.load()
	if set == nil {
		return msgs
	}
	if set != c.set {
		clear(c.keys)
		c.keys, c.clean, c.set = c.keys[:0], c.clean[:0], set
	}
	c.update(set, msgs)
	var out []provider.Message
	for i, m := range msgs {
		if !c.clean[i] && out == nil {
			out = append(make([]provider.Message, 0, len(msgs)), msgs[:i]...)
		}
		if out == nil {
			continue
		}
		if !c.clean[i] {
			m, _ = set.message(m)
		}
		out = append(out, m)
	}
	if out == nil {
		return msgs
	}
	return out
}

// update makes the cache describe msgs, reading the messages it did not
// have.
func (c *RequestCache) update(set *secretSet, msgs []provider.Message) {
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
		c.clean = append(c.clean[:i], c.clean[j:]...)
	}
	clear(c.keys[i:]) // let go of the strings of what is no longer cached
	c.keys, c.clean = c.keys[:i], c.clean[:i]
	for ; i < len(msgs); i++ {
		_, changed := set.message(msgs[i])
		c.keys = append(c.keys, msgkey.Of(msgs[i]))
		c.clean = append(c.clean, !changed)
	}
}
