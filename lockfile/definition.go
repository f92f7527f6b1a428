package lockfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tool is what an MCP server says one of its tools is: the fields its
// definition is pinned by. Other fields (icons, _meta) do not change what
// the model reads or what the gate decides, and are left out.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *Annotations
}

// Annotations are a tool's hints as the server sent them; nil pointers are
// hints not sent.
type Annotations struct {
	Title           string
	ReadOnlyHint    bool
	DestructiveHint *bool
	IdempotentHint  bool
	OpenWorldHint   *bool
}

// Definition is the canonical JSON of t: an object with name, title,
// description, inputSchema, outputSchema and annotations (the MCP
// specification's names), members that are empty or at their default left
// out, keys sorted, no spacing, numbers as written, no HTML escaping. Two
// definitions that mean the same are the same bytes, whatever order or
// spacing the server used.
func Definition(t Tool) (json.RawMessage, error) {
	m := map[string]any{"name": t.Name}
	if t.Title != "" {
		m["title"] = t.Title
	}
	if t.Description != "" {
		m["description"] = t.Description
	}
	for key, raw := range map[string]json.RawMessage{"inputSchema": t.InputSchema, "outputSchema": t.OutputSchema} {
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		v, err := decode(raw)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %s: %w", t.Name, key, err)
		}
		m[key] = v
	}
	if a := t.Annotations; a != nil {
		am := map[string]any{}
		if a.Title != "" {
			am["title"] = a.Title
		}
		if a.ReadOnlyHint {
			am["readOnlyHint"] = true
		}
		if a.DestructiveHint != nil {
			am["destructiveHint"] = *a.DestructiveHint
		}
		if a.IdempotentHint {
			am["idempotentHint"] = true
		}
		if a.OpenWorldHint != nil {
			am["openWorldHint"] = *a.OpenWorldHint
		}
		if len(am) > 0 {
			m["annotations"] = am
		}
	}
	return marshal(m)
}

// Digest is "sha256:" and the hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Canonical is the canonical form of one JSON value (see Definition).
func Canonical(raw []byte) (json.RawMessage, error) {
	v, err := decode(raw)
	if err != nil {
		return nil, err
	}
	return marshal(v)
}

// decode reads exactly one JSON value, numbers kept as written.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func marshal(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Readable is canonical JSON indented for a person: two spaces a level, and
// every character that does not print as itself (controls, zero-width and
// bidirectional characters, which can hide instructions in a description)
// written as a \u escape. It means the same JSON.
func Readable(canonical json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, canonical, "", "  "); err != nil {
		return escapeInvisible(string(canonical))
	}
	return escapeInvisible(buf.String())
}

// escapeInvisible writes the characters of s that do not print as
// themselves as JSON \u escapes (two, a surrogate pair, beyond the BMP);
// newlines and spaces between JSON tokens stay. Inside a JSON string such
// a character is never a newline (encoding/json escapes those), so the
// result is the same JSON.
func escapeInvisible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == ' ' || visible(r, size):
			b.WriteString(s[i : i+size])
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// visible reports whether r prints as itself on one line: not a control,
// format (zero-width, bidirectional) or separator character, and valid.
func visible(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return false
	}
	return unicode.IsPrint(r) && !unicode.Is(unicode.Cf, r)
}

// escapeLine is s on one line for a report: characters that do not print
// as themselves written as Go escapes.
func escapeLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != '\n' && (r == ' ' || visible(r, size)) {
			b.WriteString(s[i : i+size])
		} else {
			q := strconv.Quote(s[i : i+size])
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
