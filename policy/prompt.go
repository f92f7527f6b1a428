package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// What a person is shown before deciding fits an 80×24 terminal, whatever
// the model sent: the whole prompt (the header, why asked, at most
// PromptArgumentLines lines of arguments, the digest and the question) is
// at most 23 lines of at most PromptWidth columns, so nothing in it can be
// scrolled off the screen by the arguments.
const (
	// PromptWidth is the widest line of a prompt, in characters.
	PromptWidth = 80
	// PromptArgumentLines is the most lines the arguments take.
	PromptArgumentLines = 16
	// promptDepth: containers nested deeper are shown on one line.
	promptDepth = 4
	// promptMinValue is the least room a value gets, however long its key
	// (which is at most promptKeyWidth, quoted and marked repeated).
	promptMinValue = 28
	// promptKeyWidth is the longest key shown whole.
	promptKeyWidth = 24
	// promptStringLines is the most lines a string takes before it is
	// elided (when the arguments fit in PromptArgumentLines that way).
	promptStringLines = 3
)

// Prompt is what a person reads before deciding a request, one line each,
// no wider than PromptWidth: who wants to run what, why asked, the
// arguments (RenderArguments) and their digest. req is as Prepared made it,
// or as read from the queue. The caller adds the question.
func Prompt(req Request) string {
	var b strings.Builder
	// Room for the terminal's "symbi: " before it.
	b.WriteString(fitLine(fmt.Sprintf("agent %s wants to run %s", req.Agent, req.Action), PromptWidth-len("symbi: ")) + "\n")
	if req.Reason != "" {
		fmt.Fprintf(&b, "  why asked: %s\n", fitLine(req.Reason, PromptWidth-len("  why asked: ")))
	}
	b.WriteString("  arguments:\n")
	b.WriteString(RenderArguments(req.Arguments, "    ", PromptWidth, PromptArgumentLines))
	fmt.Fprintf(&b, "  digest %s\n", digestOrNone(req.ArgumentsDigest))
	return b.String()
}

func digestOrNone(d string) string {
	if d == "" {
		return "(none: the request does not say; a decision on it releases nothing)"
	}
	return fitLine(d, PromptWidth-len("  digest "))
}

// RenderArguments shows JSON arguments to a person: one key per line,
// nested objects and arrays indented below their key, every string quoted
// with control characters, newlines and invisible characters escaped, keys
// in the order they were sent (a repeated key is shown each time and
// marked "(again)"). No line is wider than width: a long string continues
// on up to two more lines, and a longer value is elided in the middle and
// its length given. At most maxLines lines: when that does not fit, every
// value gets one line, then each top-level key gets one line with its
// value on it, and when even that is too long, the last line says how
// many keys are not shown. Bytes that are not JSON are shown as one
// escaped string.
func RenderArguments(raw json.RawMessage, indent string, width, maxLines int) string {
	if maxLines < 2 {
		maxLines = 2
	}
	root, err := parseNode(raw)
	if err != nil {
		return indent + "(not JSON) " + quoteFit(string(raw), width-len(indent)-len("(not JSON) ")) + "\n"
	}
	// The most readable form that fits: long strings over a few lines,
	// then each value on one line, then each top-level entry on one line.
	var lines []string
	for _, wrap := range []int{promptStringLines, 1} {
		lines = lines[:0]
		r := renderer{width: width, wrap: wrap}
		r.block(&lines, root, indent, 0)
		if len(lines) <= maxLines {
			return joinLines(lines)
		}
	}
	lines = lines[:0]
	renderer{width: width, wrap: 1}.flat(&lines, root, indent)
	if len(lines) > maxLines {
		hidden := len(lines) - (maxLines - 1)
		lines = append(lines[:maxLines-1], indent+fmt.Sprintf("(%d more not shown, %d in all: deny unless expected)", hidden, len(lines)))
	}
	return joinLines(lines)
}

// ArgumentsLine is JSON arguments on one line of at most width characters
// (about: a key longer than the share of its line is shown whole) for
// timelines: the compact JSON when it fits, else {key: value, …} with every
// top-level key shown and the values sharing the room left, each elided in
// the middle. Bytes that are not a JSON object are shown escaped and
// elided in the middle.
func ArgumentsLine(raw json.RawMessage, width int) string {
	root, err := parseNode(raw)
	if err != nil || root.kind != '{' {
		return fitLine(strings.Join(strings.Fields(string(raw)), " "), width)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) == nil {
		if s := EscapeLine(compact.String()); utf8.RuneCountInString(s) <= width {
			return s
		}
	}
	keys := make([]string, len(root.keys))
	room := width - 2 // the braces
	for i, k := range root.keys {
		keys[i] = renderKey(k)
		room -= utf8.RuneCountInString(keys[i]) + 2 // ": " or ", "
	}
	share := room / len(keys)
	r := renderer{width: width, wrap: 1}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + ": ")
		if share < 12 {
			b.WriteString("…")
			continue
		}
		b.WriteString(r.inline(root.items[i], share))
	}
	b.WriteByte('}')
	return b.String()
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// node is one JSON value with object members in the order they came,
// repeated keys included: what a tool that reads the raw bytes may see.
type node struct {
	kind  byte // '{', '[', 's' (string), 'n' (number), 'l' (true, false, null)
	text  string
	keys  []string // objects
	items []*node  // object values (beside keys), array items
}

func parseNode(raw []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{kind: byte(t)}
		for dec.More() {
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				ks, _ := k.(string)
				n.keys = append(n.keys, ks)
			}
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &node{kind: 's', text: t}, nil
	case json.Number:
		return &node{kind: 'n', text: string(t)}, nil
	case bool:
		return &node{kind: 'l', text: strconv.FormatBool(t)}, nil
	case nil:
		return &node{kind: 'l', text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

type renderer struct {
	width int
	wrap  int // lines a string may take
}

// block renders n as the lines of an indented block.
func (r renderer) block(lines *[]string, n *node, indent string, depth int) {
	switch {
	case n.kind == '{' && len(n.items) > 0 && depth < promptDepth:
		seen := map[string]bool{}
		for i, k := range n.keys {
			key := renderKey(k)
			if seen[k] {
				key += " (again)"
			}
			seen[k] = true
			r.entry(lines, indent, key+":", n.items[i], depth)
		}
	case n.kind == '[' && len(n.items) > 0 && depth < promptDepth:
		for _, it := range n.items {
			r.entry(lines, indent, "-", it, depth)
		}
	default:
		*lines = append(*lines, indent+r.inline(n, r.width-len(indent)))
	}
}

// entry is one key (or "-" for an array item) and its value: on the same
// line when the value is a scalar or empty, else indented below it.
func (r renderer) entry(lines *[]string, indent, label string, v *node, depth int) {
	nested := (v.kind == '{' || v.kind == '[') && len(v.items) > 0 && depth+1 < promptDepth
	if nested {
		*lines = append(*lines, indent+label)
		r.block(lines, v, indent+"  ", depth+1)
		return
	}
	room := max(r.width-len(indent)-utf8.RuneCountInString(label)-1, promptMinValue)
	if v.kind == 's' && r.wrap > 1 {
		cont := indent + "  "
		for i, l := range quoteLines(v.text, room, r.width-len(cont), r.wrap) {
			if i == 0 {
				*lines = append(*lines, indent+label+" "+l)
			} else {
				*lines = append(*lines, cont+l)
			}
		}
		return
	}
	*lines = append(*lines, indent+label+" "+r.inline(v, room))
}

// flat renders one line per top-level entry.
func (r renderer) flat(lines *[]string, n *node, indent string) {
	switch n.kind {
	case '{':
		for i, k := range n.keys {
			label := renderKey(k) + ":"
			room := max(r.width-len(indent)-utf8.RuneCountInString(label)-1, promptMinValue)
			*lines = append(*lines, indent+label+" "+r.inline(n.items[i], room))
		}
	case '[':
		for _, it := range n.items {
			*lines = append(*lines, indent+"- "+r.inline(it, r.width-len(indent)-2))
		}
	default:
		*lines = append(*lines, indent+r.inline(n, r.width-len(indent)))
	}
}

// inline renders n on one line of at most room characters.
func (r renderer) inline(n *node, room int) string {
	switch n.kind {
	case 's':
		return quoteFit(n.text, room)
	case 'n', 'l':
		return fitLine(n.text, room)
	}
	var b strings.Builder
	writeInline(&b, n, room*4) // enough to fill the line, bounded for huge values
	return elideMiddle(b.String(), room)
}

// writeInline writes n in one line, {key: value, …}, stopping once b holds
// more than limit bytes.
func writeInline(b *strings.Builder, n *node, limit int) {
	if b.Len() > limit {
		return
	}
	switch n.kind {
	case 's':
		b.WriteString(quoteFit(n.text, limit))
	case 'n', 'l':
		b.WriteString(fitLine(n.text, limit))
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(renderKey(k) + ": ")
			writeInline(b, n.items[i], limit)
			if b.Len() > limit {
				return
			}
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeInline(b, it, limit)
			if b.Len() > limit {
				return
			}
		}
		b.WriteByte(']')
	}
}

var bareKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`) })

// renderKey is a key bare when it is a plain name, else quoted; a long key
// is elided in the middle.
func renderKey(k string) string {
	if len(k) <= promptKeyWidth && bareKey().MatchString(k) {
		return k
	}
	return quoteFit(k, promptKeyWidth+2)
}

// quoteFit quotes s as a Go string (control characters, newlines, invisible
// and invalid characters escaped) in at most room characters: a longer one
// keeps its beginning and end, "…" between them inside the quotes, and its
// length after them.
func quoteFit(s string, room int) string {
	return strings.Join(quotedPieces(s, room), "")
}

// quoteLines is quoteFit over up to n lines: the first of at most first
// characters, the others of at most rest. No escape is split across lines.
func quoteLines(s string, first, rest, n int) []string {
	budget := first + rest*(n-1)
	for {
		lines := chunkPieces(quotedPieces(s, budget), first, rest)
		if len(lines) <= n || budget <= first {
			return lines
		}
		budget -= 8 // the ends of lines wasted by pieces that did not fit
	}
}

// chunkPieces lays pieces out on lines of at most first, then rest,
// characters.
func chunkPieces(pieces []string, first, rest int) []string {
	var out []string
	var cur strings.Builder
	w, room := 0, first
	for _, p := range pieces {
		pw := utf8.RuneCountInString(p)
		if w > 0 && w+pw > room {
			out = append(out, cur.String())
			cur.Reset()
			w, room = 0, rest
		}
		cur.WriteString(p)
		w += pw
	}
	return append(out, cur.String())
}

// quotedPieces is quoteFit(s, room) in pieces that are never split: the
// quotes, each escaped character, "…" and the length note.
func quotedPieces(s string, room int) []string {
	all := escapedPieces(s, -1, false)
	width := 2
	for _, p := range all {
		width += utf8.RuneCountInString(p)
	}
	if width <= room {
		return append(append([]string{`"`}, all...), `"`)
	}
	note := fmt.Sprintf(" (%d chars)", utf8.RuneCountInString(s))
	body := max(room-len(note)-3, 8) // the quotes and "…"
	out := []string{`"`}
	out = append(out, escapedPieces(s, body*2/3, false)...)
	out = append(out, "…")
	out = append(out, escapedPieces(s, body-body*2/3, true)...)
	return append(out, `"`, note)
}

// escapedPieces is the escaped characters of the beginning of s (or its
// end, in order) whose escaped forms take at most n characters in all;
// n < 0: all of s.
func escapedPieces(s string, n int, fromEnd bool) []string {
	var out []string
	w := 0
	take := func(e string) bool {
		c := utf8.RuneCountInString(e)
		if n >= 0 && w+c > n {
			return false
		}
		out = append(out, e)
		w += c
		return true
	}
	if !fromEnd {
		for i := 0; i < len(s); {
			_, size := utf8.DecodeRuneInString(s[i:])
			if !take(escapeRune(s[i : i+size])) {
				break
			}
			i += size
		}
		return out
	}
	for j := len(s); j > 0; {
		_, size := utf8.DecodeLastRuneInString(s[:j])
		if !take(escapeRune(s[j-size : j])) {
			break
		}
		j -= size
	}
	for i, k := 0, len(out)-1; i < k; i, k = i+1, k-1 {
		out[i], out[k] = out[k], out[i]
	}
	return out
}

// escapeRune is one character (or invalid byte) as strconv.Quote writes it
// inside the quotes.
func escapeRune(r string) string {
	q := strconv.Quote(r)
	return q[1 : len(q)-1]
}

// fitLine is s on one line of at most room characters: control characters
// and invisible ones escaped (EscapeLine), a longer text elided in the
// middle with its length.
func fitLine(s string, room int) string {
	return elideMiddle(EscapeLine(s), room)
}

// elideMiddle cuts a printable text longer than room characters in the
// middle and says how long it was.
func elideMiddle(s string, room int) string {
	n := utf8.RuneCountInString(s)
	if n <= room {
		return s
	}
	note := fmt.Sprintf(" (%d chars)", n)
	body := max(room-len(note)-1, 8)
	r := []rune(s)
	head, tail := body*2/3, body-body*2/3
	return string(r[:head]) + "…" + string(r[n-tail:]) + note
}

// EscapeLine makes s safe to print as (part of) one line of a terminal:
// newlines, tabs and every other control character, the characters that
// reorder or hide text (bidirectional controls, zero-width ones, line and
// paragraph separators) and invalid UTF-8 are written as Go escapes (\n,
// \x1b, \u202e); everything else is left as it is. Approval prompts and
// the one-line renderings of approval events use it on text from the
// model, a tool or a file.
func EscapeLine(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; {
		r, size := utf8.DecodeRuneInString(s[i:])
		clean = lineSafe(r, size)
		i += size
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if lineSafe(r, size) {
			b.WriteString(s[i : i+size])
		} else {
			b.WriteString(escapeRune(s[i : i+size]))
		}
		i += size
	}
	return b.String()
}

// lineSafe reports whether the character r, size bytes long, prints as
// itself on one line: an invalid byte does not.
func lineSafe(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return false
	}
	return r == ' ' || (unicode.IsPrint(r) && !unicode.Is(unicode.Cf, r))
}
