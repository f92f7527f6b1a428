package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
)

// redactedText replaces a secret wherever a run would show it.
const redactedText = "[redacted]"

// minSecretLen is the shortest value worth redacting: replacing "a" would
// shred every line and protect nothing.
const minSecretLen = 4

// redactor is the one place secrets are taken out of what the engine puts
// out: journal lines, events for the observer (the terminal, --json), the
// streamed answer and the Result. Secrets are the values the engine resolved
// itself (API keys, env() values in tool settings), so it knows them all
// before anything containing them can be written.
//
// Every event passes through it, so reading takes no lock: adding a secret
// (rare, when a model or a toolbox is built) publishes a new secretSet.
type redactor struct {
	mu  sync.Mutex // serialises add
	set atomic.Pointer[secretSet]
}

// secretSet is never changed once published.
type secretSet struct {
	secrets []string
	// forms are the byte sequences that betray a secret in encoded JSON:
	// the secret as it is and as encoding/json escapes it.
	forms   [][]byte
	longest int
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
		secrets: append(append([]string(nil), old.secrets...), s),
		forms:   append(append([][]byte(nil), old.forms...), []byte(s)),
		longest: max(old.longest, len(s)),
	}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s) // a string always encodes
		f := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		f = f[1 : len(f)-1]
		if !bytes.Equal(f, []byte(s)) {
			x.forms = append(x.forms, f)
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
	return replaceSecrets(s, set.secrets)
}

func replaceSecrets(s string, secrets []string) string {
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redactedText)
		}
	}
	return s
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

// json redacts an encoded JSON value and keeps it valid: secrets inside
// strings (however escaped) and bare numbers that contain one (a PIN)
// become "[redacted]". A value without a trace of a secret is returned as
// it is, without decoding it; that is the common case and costs a few
// byte searches.
func (x *redactor) json(b []byte) []byte {
	set := x.load()
	if set == nil || len(b) == 0 {
		return b
	}
	// A \u escape can spell any character, so its presence means the
	// forms cannot rule a secret out.
	suspect := bytes.Contains(b, []byte(`\u`))
	for _, f := range set.forms {
		if suspect {
			break
		}
		suspect = bytes.Contains(b, f)
	}
	if !suspect {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		// Not JSON (it always is, from record): plain replacement.
		s := string(b)
		for _, f := range set.forms {
			s = strings.ReplaceAll(s, string(f), redactedText)
		}
		return []byte(s)
	}
	v, changed := redactValue(v, set.secrets)
	if !changed {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return []byte(`"` + redactedText + `"`)
	}
	return out
}

func redactValue(v any, secrets []string) (any, bool) {
	switch t := v.(type) {
	case string:
		s := replaceSecrets(t, secrets)
		return s, s != t
	case json.Number:
		if s := replaceSecrets(string(t), secrets); s != string(t) {
			return redactedText, true
		}
	case []any:
		changed := false
		for i, e := range t {
			var c bool
			t[i], c = redactValue(e, secrets)
			changed = changed || c
		}
		return t, changed
	case map[string]any:
		changed := false
		for k, e := range t {
			e, c := redactValue(e, secrets)
			if nk := replaceSecrets(k, secrets); nk != k {
				delete(t, k)
				k, c = nk, true
			}
			t[k] = e
			changed = changed || c
		}
		return t, changed
	}
	return v, false
}

// stream redacts the text streamed so far that has not been shown (held
// plus the new delta) and splits it into what may be shown now and a tail
// to hold back: the longest end of the text that is the beginning of a
// secret, which the next delta may complete. The tail is at most the
// longest secret's length less one.
func (x *redactor) stream(s string) (show, hold string) {
	set := x.load()
	if set == nil {
		return s, ""
	}
	s = replaceSecrets(s, set.secrets)
	for k := min(len(s), set.longest-1); k > 0; k-- {
		tail := s[len(s)-k:]
		for _, sec := range set.secrets {
			if len(sec) > k && strings.HasPrefix(sec, tail) {
				return s[:len(s)-k], tail
			}
		}
	}
	return s, ""
}
