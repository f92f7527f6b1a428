package journal

import (
	"bytes"
	"encoding/json"
	"strings"
)

const redacted = "[redacted]"

// redactor replaces registered secrets in encoded lines.
type redactor struct {
	secrets []string
	// plain holds, for each secret, its longest run of bytes that a JSON
	// encoder writes as they are. A string token whose bytes lack that run
	// cannot decode to text containing the secret (unless it uses \u
	// escapes, which are checked separately), so most lines are cleared
	// without decoding anything.
	plain [][]byte
}

func (r *redactor) add(secret string) {
	for _, have := range r.secrets {
		if have == secret {
			return
		}
	}
	r.secrets = append(r.secrets, secret)
	r.plain = append(r.plain, plainRun(secret))
}

// plainRun returns the longest run of s free of bytes an encoder may escape:
// quote, backslash, control characters, the HTML characters encoding/json
// escapes by default, and any non-ASCII byte (U+2028 and U+2029 are escaped,
// invalid UTF-8 is replaced).
func plainRun(s string) []byte {
	best, start := "", 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || escapable(s[i]) {
			if i-start > len(best) {
				best = s[start:i]
			}
			start = i + 1
		}
	}
	return []byte(best)
}

func escapable(c byte) bool {
	return c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
}

// mayContain reports whether b, part of an encoded line, could hold a secret.
func (r *redactor) mayContain(b []byte) bool {
	if bytes.Contains(b, []byte(`\u`)) {
		return true
	}
	for _, p := range r.plain {
		if len(p) == 0 || bytes.Contains(b, p) {
			return true
		}
	}
	return false
}

// redact replaces every secret in line, a JSON value, and keeps it valid
// JSON. It works on decoded string values
// rather than on the raw bytes: matching raw bytes would miss a secret
// written with escapes (a quote, a newline, \u003c) and could cut an escape
// sequence in half. A bare number containing a secret (a PIN) becomes the
// string "[redacted]". It returns line itself when nothing matched.
func (r *redactor) redact(line []byte) []byte {
	if len(r.secrets) == 0 || !r.mayContain(line) {
		return line
	}
	var out []byte // nil until the first change
	copied := 0    // line[:copied] is already in out
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == '"':
			j, escaped := stringEnd(line, i)
			tok := line[i:j]
			var replaced string
			var changed bool
			switch {
			case !escaped:
				replaced, changed = replaceAllBytes(tok[1:len(tok)-1], r.secrets)
			case r.mayContain(tok):
				var s string
				if json.Unmarshal(tok, &s) == nil {
					replaced, changed = replaceAll(s, r.secrets)
				}
			}
			if changed {
				out = append(out, line[copied:i]...)
				out = appendJSONString(out, replaced)
				copied = j
			}
			i = j
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(line) && strings.IndexByte("+-.0123456789eE", line[j]) >= 0 {
				j++
			}
			if _, changed := replaceAllBytes(line[i:j], r.secrets); changed {
				out = append(out, line[copied:i]...)
				out = appendJSONString(out, redacted)
				copied = j
			}
			i = j
		default:
			i++
		}
	}
	if out == nil {
		return line
	}
	return append(out, line[copied:]...)
}

// stringEnd returns the index just past the string token starting at
// line[i] == '"', and whether the token holds any escape.
func stringEnd(line []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(line); j++ {
		switch line[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(line), escaped
}

func replaceAll(s string, secrets []string) (string, bool) {
	changed := false
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redacted)
			changed = true
		}
	}
	return s, changed
}

func replaceAllBytes(b []byte, secrets []string) (string, bool) {
	for _, sec := range secrets {
		if bytes.Contains(b, []byte(sec)) {
			return replaceAll(string(b), secrets)
		}
	}
	return "", false
}

func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
