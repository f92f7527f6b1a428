package cassette

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/symbi-dev/symbi/provider"
)

// Diff describes how the request sent differs from the one recorded, in
// the words of the request: which message changed and how (a line diff of
// its text), which tool was added, removed or changed, which setting
// changed. Ignored fields and normalized text are compared as Match says;
// nothing is printed for what is equal. Text from the request (the model's
// words, a tool's output) is shown with control characters escaped, so it
// cannot drive the terminal.
func (m *Match) Diff(recorded, sent provider.Request) string {
	a, b := m.Canonical(recorded), m.Canonical(sent)
	var d differ
	if a.Model != b.Model {
		d.line("model: %s → %s", quote(a.Model), quote(b.Model))
	}
	d.messages(a.Messages, b.Messages)
	d.tools(a.Tools, b.Tools)
	if a.ToolChoice != b.ToolChoice {
		d.line("tool_choice: %s → %s", quote(a.ToolChoice), quote(b.ToolChoice))
	}
	if ta, tb := temperature(a.Temperature), temperature(b.Temperature); ta != tb {
		d.line("temperature: %s → %s", ta, tb)
	}
	if a.MaxOutputTokens != b.MaxOutputTokens {
		d.line("max_output_tokens: %d → %d", a.MaxOutputTokens, b.MaxOutputTokens)
	}
	if a.JSON != b.JSON {
		d.line("json: %t → %t", a.JSON, b.JSON)
	}
	if d.b.Len() == 0 {
		return "  (the requests are equal)\n"
	}
	return d.b.String()
}

type differ struct{ b strings.Builder }

func (d *differ) line(format string, args ...any) {
	d.b.WriteString("  ")
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteByte('\n')
}

func (d *differ) messages(a, b []provider.Message) {
	if len(a) != len(b) {
		d.line("messages: %d recorded, %d sent", len(a), len(b))
	}
	// Messages are aligned as the lines of a text are: one inserted before
	// the others (a new system prompt) is one message added, not every
	// message after it changed. A run of removed messages followed by as
	// many added is shown message by message, as changed in place.
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i, m := range a {
		ka[i] = messageKey(m)
	}
	for i, m := range b {
		kb[i] = messageKey(m)
	}
	ops := lineDiff(ka, kb)
	i, j := 0, 0 // the next recorded and sent message
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			i, j, k = i+1, j+1, k+1
			continue
		}
		removed, added := 0, 0
		for ; k < len(ops) && ops[k].kind != ' '; k++ {
			if ops[k].kind == '-' {
				removed++
			} else {
				added++
			}
		}
		paired := min(removed, added)
		for n := range paired {
			d.message(j+n, a[i+n], b[j+n])
		}
		for n := paired; n < removed; n++ {
			d.line("messages[%d] (%s) was recorded but not sent: %s", i+n, a[i+n].Role, summary(a[i+n]))
		}
		for n := paired; n < added; n++ {
			d.line("messages[%d] (%s) was not recorded: %s", j+n, b[j+n].Role, summary(b[j+n]))
		}
		i, j = i+removed, j+added
	}
}

func messageKey(m provider.Message) string {
	b, err := json.Marshal(m)
	if err != nil {
		return m.Content
	}
	return string(b)
}

func (d *differ) message(i int, a, b provider.Message) {
	var sub differ
	if a.Role != b.Role {
		sub.line("role: %s → %s", a.Role, b.Role)
	}
	if a.Content != b.Content {
		sub.lines(a.Content, b.Content)
	}
	if ca, cb := callLines(a.ToolCalls), callLines(b.ToolCalls); ca != cb {
		sub.line("tool calls:")
		sub.lines(ca, cb)
	}
	if a.ToolCallID != b.ToolCallID {
		sub.line("tool_call_id: %s → %s", quote(a.ToolCallID), quote(b.ToolCallID))
	}
	if a.Name != b.Name {
		sub.line("name: %s → %s", quote(a.Name), quote(b.Name))
	}
	if ta, tb := thinkingLines(a.Thinking), thinkingLines(b.Thinking); ta != tb {
		sub.line("thinking changed")
	}
	if sub.b.Len() == 0 {
		return
	}
	what := string(b.Role)
	if i == 0 && b.Role == provider.System {
		what = "the system prompt"
	}
	d.line("messages[%d] (%s) differs:", i, what)
	indent(&d.b, sub.b.String())
}

func (d *differ) tools(a, b []provider.ToolSpec) {
	byName := map[string]provider.ToolSpec{}
	for _, t := range a {
		byName[t.Name] = t
	}
	sent := map[string]bool{}
	for _, t := range b {
		sent[t.Name] = true
		old, ok := byName[t.Name]
		if !ok {
			d.line("tool %s was not recorded (it is new)", quote(t.Name))
			continue
		}
		var sub differ
		if old.Description != t.Description {
			sub.line("description:")
			sub.lines(old.Description, t.Description)
		}
		if pa, pb := indentJSON(old.Parameters), indentJSON(t.Parameters); pa != pb {
			sub.line("parameters:")
			sub.lines(pa, pb)
		}
		if sub.b.Len() > 0 {
			d.line("tool %s differs:", quote(t.Name))
			indent(&d.b, sub.b.String())
		}
	}
	for _, t := range a {
		if !sent[t.Name] {
			d.line("tool %s was recorded but not sent (it is gone)", quote(t.Name))
		}
	}
	if len(a) == len(b) {
		reordered := false
		for i := range a {
			if a[i].Name != b[i].Name {
				reordered = true
			}
		}
		if reordered && d.b.Len() == 0 {
			d.line("tools are in another order")
		}
	}
}

// lines writes a line diff of two texts: "- " for a recorded line, "+ " for
// a sent one, and one line of context around each change.
func (d *differ) lines(a, b string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	ops := lineDiff(la, lb)
	keep := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind != ' ' {
			for j := max(i-1, 0); j <= min(i+1, len(ops)-1); j++ {
				keep[j] = true
			}
		}
	}
	skipped := false
	for i, op := range ops {
		if !keep[i] {
			if !skipped {
				d.b.WriteString("    …\n")
				skipped = true
			}
			continue
		}
		skipped = false
		fmt.Fprintf(&d.b, "  %c %s\n", op.kind, shown(op.text))
	}
}

type lineOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// maxLCS bounds the longest-common-subsequence table; texts too long for
// it are shown as all removed and all added.
const maxLCS = 1 << 20

// lineDiff is a minimal line diff of a and b by their longest common
// subsequence.
func lineDiff(a, b []string) []lineOp {
	if (len(a)+1)*(len(b)+1) > maxLCS {
		var ops []lineOp
		for _, l := range a {
			ops = append(ops, lineOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, lineOp{'+', l})
		}
		return ops
	}
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []lineOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, lineOp{' ', a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, lineOp{'-', a[i]})
			i++
		default:
			ops = append(ops, lineOp{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, lineOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, lineOp{'+', b[j]})
	}
	return ops
}

func indent(b *strings.Builder, s string) {
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  ")
			b.WriteString(l)
		}
	}
}

// maxShown is the most runes of one line a diff shows.
const maxShown = 200

// shown is a line of text as a diff shows it: control and invisible
// characters escaped, and cut at maxShown runes with what was left out
// counted.
func shown(s string) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n == maxShown {
			fmt.Fprintf(&b, "… (%d more bytes)", len(s)-i)
			break
		}
		n++
		switch {
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// summary is a message on one line, for a message only one side has.
func summary(m provider.Message) string {
	s := m.Content
	if s == "" && len(m.ToolCalls) > 0 {
		s = strings.ReplaceAll(callLines(m.ToolCalls), "\n", "; ")
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return quote(s)
}

func quote(s string) string { return `"` + shown(strings.ReplaceAll(s, `"`, `\"`)) + `"` }

func callLines(calls []provider.ToolCall) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s %s %s", c.ID, c.Name, c.Arguments)
	}
	return b.String()
}

func thinkingLines(ts []provider.Thinking) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Text + "\x00" + t.Signature + "\x00" + t.Redacted + "\x00")
	}
	return b.String()
}

func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func temperature(t *float64) string {
	if t == nil {
		return "unset"
	}
	return strconv.FormatFloat(*t, 'g', -1, 64)
}
