package journal

import (
	"bytes"
	"encoding/json"
	"strings"
)

const redacted = "[redacted]"

// redact replaces every secret in line, a valid JSON value followed by a
// newline, and keeps it valid JSON. It works on decoded string values
// rather than on the raw bytes: matching raw bytes would miss a secret
// written with escapes (a quote, a newline, \u003c) and could cut an escape
// sequence in half. A bare number containing a secret (a PIN) becomes the
// string "[redacted]". It returns line itself when nothing matched.
func redact(line []byte, secrets []string) []byte {
	var out []byte // nil until the first change
	copied := 0    // line[:copied] is already in out
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == '"':
			j, escaped := stringEnd(line, i)
			tok := line[i:j]
			var s string
			if escaped {
				if json.Unmarshal(tok, &s) != nil {
					i = j
					continue
				}
			}
			replaced, changed := "", false
			if escaped {
				replaced, changed = replaceAll(s, secrets)
			} else {
				replaced, changed = replaceAllBytes(tok[1:len(tok)-1], secrets)
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
			if _, changed := replaceAllBytes(line[i:j], secrets); changed {
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
