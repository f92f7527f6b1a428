package convo

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

// Strategies, as the context block spells them.
const (
	SlidingWindow      = "sliding_window"
	ObservationMasking = "observation_masking"
	AnchoredSummary    = "anchored_summary"
)

// MessageOverhead is the tokens a message costs beyond its text (role and
// framing), and ToolCallOverhead those of each tool call beyond its name and
// arguments (id, type, function wrapper). Chat formats spend three to four
// tokens on each; erring high keeps a fitted conversation under the
// provider's real count.
const (
	MessageOverhead  = 4
	ToolCallOverhead = 4
)

// MessageTokens estimates one message: its content, name, and each tool
// call's name and arguments by stdlib.EstimateTokens, plus the overheads.
func MessageTokens(m provider.Message) int {
	n := MessageOverhead + stdlib.EstimateTokens(m.Content) + stdlib.EstimateTokens(m.Name)
	for _, c := range m.ToolCalls {
		n += ToolCallOverhead + stdlib.EstimateTokens(c.Name) + stdlib.EstimateTokens(c.Arguments)
	}
	return n
}

// Fit returns msgs fitted to s.TokenBudget by s.Strategy. Within budget (or
// with no budget) it returns msgs itself, uncopied. Otherwise it returns a
// new slice that always keeps the leading system messages and the last
// exchange (the last message, or the last assistant message with its tool
// results); if those alone are over budget they are returned anyway,
// since a call without them is pointless. Tool messages that follow no
// assistant tool call are dropped once fitting starts. An unknown strategy
// is treated as sliding_window.
func Fit(msgs []provider.Message, s plan.ContextSettings) []provider.Message {
	return FitTokens(msgs, s, nil)
}

// FitTokens is Fit with each message's MessageTokens already known:
// tokens[i] must be MessageTokens(msgs[i]) (a caller that keeps a growing
// conversation can estimate each message once rather than on every call).
// With tokens nil, or not one per message, it estimates them itself. It
// does not modify tokens.
func FitTokens(msgs []provider.Message, s plan.ContextSettings, tokens []int) []provider.Message {
	if s.TokenBudget <= 0 {
		return msgs
	}
	total := 0
	if len(tokens) != len(msgs) {
		// Estimating is most of Fit's cost (it reads every byte), so each
		// message is estimated once and the figures reused below.
		tokens = make([]int, len(msgs))
		for i, m := range msgs {
			tokens[i] = MessageTokens(m)
		}
	}
	for _, n := range tokens {
		total += n
	}
	if total <= s.TokenBudget {
		return msgs
	}
	c := split(msgs, tokens)
	switch s.Strategy {
	case ObservationMasking:
		// The last exchange is never masked: the model has not seen it yet.
		cut := len(msgs) - max(s.Recent, 0)
		if n := len(c.groups); n > 0 {
			cut = min(cut, c.groups[n-1].start)
		}
		c.mask(cut)
		c.dropOldest(s.TokenBudget)
	case AnchoredSummary:
		return c.anchor(s.TokenBudget, max(s.Recent, 0))
	default:
		c.dropOldest(s.TokenBudget)
	}
	return c.build(nil)
}

// group is a run of messages that must stay together: an assistant message
// with tool calls and the tool results after it, or a single message.
type group struct {
	start, end int
	tokens     int
	orphan     bool // tool results with no assistant tool call before them
}

type conversation struct {
	msgs       []provider.Message
	msgTokens  []int // MessageTokens of each message
	head       int   // leading system messages
	headTokens int
	groups     []group
	first      int   // index of the first kept group
	masked     []int // content tokens of each masked tool result; 0: not masked
}

func split(msgs []provider.Message, tokens []int) *conversation {
	c := &conversation{msgs: msgs, msgTokens: tokens}
	for c.head < len(msgs) && msgs[c.head].Role == provider.System && !isNote(msgs[c.head]) {
		c.headTokens += tokens[c.head]
		c.head++
	}
	for i := c.head; i < len(msgs); {
		g := group{start: i, end: i + 1}
		switch {
		case msgs[i].Role == provider.Assistant && len(msgs[i].ToolCalls) > 0:
			for g.end < len(msgs) && msgs[g.end].Role == provider.ToolRole {
				g.end++
			}
		case msgs[i].Role == provider.ToolRole:
			for g.end < len(msgs) && msgs[g.end].Role == provider.ToolRole {
				g.end++
			}
			g.orphan = true
		}
		for _, n := range tokens[g.start:g.end] {
			g.tokens += n
		}
		if !g.orphan {
			c.groups = append(c.groups, g)
		}
		i = g.end
	}
	return c
}

func (c *conversation) message(i int) provider.Message {
	m := c.msgs[i]
	if i < len(c.masked) && c.masked[i] > 0 {
		m.Content = placeholder(c.masked[i])
	}
	return m
}

func (c *conversation) tokens() int {
	n := c.headTokens
	for _, g := range c.groups[c.first:] {
		n += g.tokens
	}
	return n
}

// dropOldest drops whole groups from the oldest while over budget, keeping
// the last one.
func (c *conversation) dropOldest(budget int) {
	total := c.tokens()
	for total > budget && c.first < len(c.groups)-1 {
		total -= c.groups[c.first].tokens
		c.first++
	}
}

const maskPrefix = "[observation masked: "

func placeholder(tokens int) string { return maskPrefix + strconv.Itoa(tokens) + " tokens]" }

// placeholderTokens is stdlib.EstimateTokens(placeholder(tokens)) without
// building the string: most masked results are dropped right after, so
// their placeholders are only ever counted.
func placeholderTokens(tokens int) int {
	n := len(maskPrefix) + len(" tokens]") + 1
	for t := tokens; t >= 10; t /= 10 {
		n++
	}
	return (n + 3) / 4
}

// mask replaces tool results before index cut by placeholders, where that
// saves tokens. A result masked by an earlier Fit keeps its placeholder.
func (c *conversation) mask(cut int) {
	for gi := range c.groups {
		g := &c.groups[gi]
		for i := g.start; i < g.end && i < cut; i++ {
			m := c.msgs[i]
			if m.Role != provider.ToolRole || strings.HasPrefix(m.Content, maskPrefix) {
				continue
			}
			// A tool message has no tool calls: its content's estimate is
			// what is left of its MessageTokens, without reading it again.
			orig := c.msgTokens[i] - MessageOverhead - stdlib.EstimateTokens(m.Name)
			saved := orig - placeholderTokens(orig)
			if saved <= 0 {
				continue
			}
			if c.masked == nil {
				c.masked = make([]int, len(c.msgs))
			}
			c.masked[i] = orig
			g.tokens -= saved
		}
	}
}

// build copies the head and the kept groups into a new slice, with note
// (if any) between the first and second lists of groups. It never reuses
// the input's backing array: a caller that keeps the result must not keep
// the dropped messages alive with it.
func (c *conversation) build(note *provider.Message, keep ...[]group) []provider.Message {
	if keep == nil {
		keep = [][]group{c.groups[c.first:]}
	}
	n := c.head
	for _, gs := range keep {
		for _, g := range gs {
			n += g.end - g.start
		}
	}
	if note != nil {
		n++
	}
	out := make([]provider.Message, 0, n)
	out = append(out, c.msgs[:c.head]...)
	for k, gs := range keep {
		if k == 1 && note != nil {
			out = append(out, *note)
		}
		for _, g := range gs {
			for i := g.start; i < g.end; i++ {
				out = append(out, c.message(i))
			}
		}
	}
	return out
}

// anchor keeps the head, the first user message and the recent groups, and
// replaces everything else by one note.
func (c *conversation) anchor(budget, recent int) []provider.Message {
	anchor := -1
	for gi, g := range c.groups {
		if m := c.msgs[g.start]; m.Role == provider.User && !isNote(m) {
			anchor = gi
			break
		}
	}
	// Recent groups: as many of the last as fit in `recent` messages, and
	// always the last exchange.
	from := len(c.groups)
	count := 0
	for from > anchor+1 {
		g := c.groups[from-1]
		if count+g.end-g.start > recent && from < len(c.groups) {
			break
		}
		count += g.end - g.start
		from--
	}
	var anchored []group
	if anchor >= 0 {
		anchored = c.groups[anchor : anchor+1]
	}
	for {
		var middle []group
		middle = append(middle, c.groups[:max(anchor, 0)]...)
		middle = append(middle, c.groups[anchor+1:from]...)
		total := c.headTokens
		for _, gs := range [][]group{anchored, c.groups[from:]} {
			for _, g := range gs {
				total += g.tokens
			}
		}
		var note *provider.Message
		if len(middle) > 0 {
			m := c.note(middle)
			note = &m
			total += MessageTokens(m)
		}
		if total <= budget || from >= len(c.groups)-1 {
			if from == len(c.groups) {
				// The first user message is the last exchange: the note,
				// about messages before it, goes before it, so that the
				// conversation still ends with what the model answers.
				return c.build(note, nil, anchored)
			}
			return c.build(note, anchored, c.groups[from:])
		}
		from++
	}
}

// note summarizes the omitted groups in one message, adding up any note an
// earlier Fit left among them, so repeated fitting keeps one note whose
// counts cover the whole omitted history.
func (c *conversation) note(omitted []group) provider.Message {
	n := 0
	calls := map[string]int{}
	for _, g := range omitted {
		for _, m := range c.msgs[g.start:g.end] {
			if prev, tools, ok := parseNote(m); ok {
				n += prev
				for name, k := range tools {
					calls[name] += k
				}
				continue
			}
			n++
			for _, tc := range m.ToolCalls {
				calls[tc.Name]++
			}
		}
	}
	return provider.Message{Role: provider.User, Content: formatNote(n, calls)}
}

// formatNote writes "[12 earlier messages omitted: tool calls calculator x3,
// web_search x1]". It stays ASCII: one "×" would make the estimator count
// the whole note by runes and double its cost.
func formatNote(n int, calls map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d earlier message", n)
	if n != 1 {
		b.WriteByte('s')
	}
	b.WriteString(" omitted")
	if len(calls) > 0 {
		names := make([]string, 0, len(calls))
		for name := range calls {
			names = append(names, name)
		}
		sort.Strings(names)
		b.WriteString(": tool calls ")
		for i, name := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s x%d", name, calls[name])
		}
	}
	b.WriteByte(']')
	return b.String()
}

var noteRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[(\d+) earlier messages? omitted(?:: tool calls (.+))?\]$`)
})

func isNote(m provider.Message) bool {
	_, _, ok := parseNote(m)
	return ok
}

// parseNote reads a note formatNote wrote.
func parseNote(m provider.Message) (int, map[string]int, bool) {
	if m.Role == provider.ToolRole || len(m.ToolCalls) > 0 || !strings.HasSuffix(m.Content, "]") || !strings.HasPrefix(m.Content, "[") {
		return 0, nil, false
	}
	sub := noteRE().FindStringSubmatch(m.Content)
	if sub == nil {
		return 0, nil, false
	}
	n, err := strconv.Atoi(sub[1])
	if err != nil {
		return 0, nil, false
	}
	calls := map[string]int{}
	if sub[2] != "" {
		for _, part := range strings.Split(sub[2], ", ") {
			i := strings.LastIndex(part, " x")
			if i <= 0 {
				return 0, nil, false
			}
			k, err := strconv.Atoi(part[i+len(" x"):])
			if err != nil {
				return 0, nil, false
			}
			calls[part[:i]] += k
		}
	}
	return n, calls, true
}
