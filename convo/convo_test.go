package convo

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/stdlib"
)

func sys(s string) provider.Message  { return provider.Message{Role: provider.System, Content: s} }
func user(s string) provider.Message { return provider.Message{Role: provider.User, Content: s} }
func asst(s string) provider.Message { return provider.Message{Role: provider.Assistant, Content: s} }

// estimate is the token estimate of a conversation as Fit counts it against
// the budget: the sum of its messages' MessageTokens.
func estimate(msgs []provider.Message) int {
	n := 0
	for _, m := range msgs {
		n += MessageTokens(m)
	}
	return n
}

func calls(names ...string) provider.Message {
	m := provider.Message{Role: provider.Assistant}
	for _, n := range names {
		m.ToolCalls = append(m.ToolCalls, provider.ToolCall{ID: "id-" + n, Name: n, Arguments: `{"q":"x"}`})
	}
	return m
}

func result(name, content string) provider.Message {
	return provider.Message{Role: provider.ToolRole, ToolCallID: "id-" + name, Name: name, Content: content}
}

// exchange is a tool round: the assistant calls the tools and each result
// follows.
func exchange(size int, names ...string) []provider.Message {
	out := []provider.Message{calls(names...)}
	for _, n := range names {
		out = append(out, result(n, strings.Repeat("r", size)))
	}
	return out
}

func conv(parts ...any) []provider.Message {
	var out []provider.Message
	for _, p := range parts {
		switch p := p.(type) {
		case provider.Message:
			out = append(out, p)
		case []provider.Message:
			out = append(out, p...)
		}
	}
	return out
}

func TestMessageTokens(t *testing.T) {
	if got := MessageTokens(user("abcd")); got != MessageOverhead+1 {
		t.Errorf("user: %d", got)
	}
	// name "calc" 1, arguments {"q":"x"} (9 bytes) 3
	if got := MessageTokens(calls("calc")); got != MessageOverhead+ToolCallOverhead+1+3 {
		t.Errorf("tool call: %d", got)
	}
	// content 8 bytes 2, name "calc" 1
	if got := MessageTokens(result("calc", "12345678")); got != MessageOverhead+2+1 {
		t.Errorf("tool result: %d", got)
	}
	if got := estimate([]provider.Message{user("abcd"), user("abcd")}); got != 2*(MessageOverhead+1) {
		t.Errorf("estimate: %d", got)
	}
}

func TestPlaceholderTokens(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 99, 100, 999, 1000, 12345, 1 << 30} {
		if got, want := placeholderTokens(n), stdlib.EstimateTokens(placeholder(n)); got != want {
			t.Errorf("placeholderTokens(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestWithinBudgetIsUncopied(t *testing.T) {
	msgs := conv(sys("s"), user("u"), exchange(10, "a"), asst("done"))
	for _, s := range []plan.ContextSettings{
		{Strategy: SlidingWindow, TokenBudget: estimate(msgs)},
		{Strategy: AnchoredSummary, TokenBudget: 1 << 20},
		{Strategy: ObservationMasking, TokenBudget: 0}, // no budget
	} {
		out := Fit(msgs, s)
		if len(out) != len(msgs) || &out[0] != &msgs[0] {
			t.Errorf("%+v: conversation within budget was copied or changed", s)
		}
	}
}

func TestSlidingWindow(t *testing.T) {
	msgs := conv(sys("system"), user("task"))
	for range 10 {
		msgs = append(msgs, exchange(400, "search")...) // ~100 tokens a result
	}
	budget := MessageTokens(msgs[0]) + 3*estimate(exchange(400, "search"))
	out := Fit(msgs, plan.ContextSettings{Strategy: SlidingWindow, TokenBudget: budget})
	want := conv(sys("system"), exchange(400, "search"), exchange(400, "search"), exchange(400, "search"))
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if estimate(out) > budget {
		t.Errorf("estimate %d over budget %d", estimate(out), budget)
	}
}

func TestLastExchangeAlwaysKept(t *testing.T) {
	msgs := conv(sys("system"), user("task"), exchange(4000, "a", "b"))
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary, "unknown"} {
		out := Fit(msgs, plan.ContextSettings{Strategy: strategy, TokenBudget: 10, Recent: 0})
		if got := out[len(out)-3:]; !cmp.Equal(got, msgs[2:]) {
			t.Errorf("%s: last exchange not kept whole: %v", strategy, got)
		}
		if !cmp.Equal(out[0], msgs[0]) {
			t.Errorf("%s: system message lost", strategy)
		}
	}
}

func TestObservationMasking(t *testing.T) {
	msgs := conv(sys("system"), user("task"),
		exchange(4000, "fetch"), // masked
		exchange(4000, "fetch"), // masked
		exchange(4000, "read"),  // recent: kept
		asst("answer"))
	s := plan.ContextSettings{Strategy: ObservationMasking, TokenBudget: 1500, Recent: 3}
	in := append([]provider.Message(nil), msgs...)
	out := Fit(msgs, s)
	if !cmp.Equal(in, msgs) {
		t.Fatal("Fit changed its input")
	}
	if len(out) != len(msgs) {
		t.Fatalf("masking alone fits, yet %d of %d messages kept", len(out), len(msgs))
	}
	for i, m := range out {
		want := msgs[i]
		if i == 3 || i == 5 {
			want.Content = "[observation masked: 1000 tokens]"
		}
		if !cmp.Equal(want, m) {
			t.Errorf("message %d = %+v, want %+v", i, m, want)
		}
	}
	if out[7].Content != msgs[7].Content {
		t.Error("a recent tool result was masked")
	}
	// Fitting the fitted history again changes nothing.
	again := Fit(out, s)
	if !cmp.Equal(out, again) {
		t.Errorf("refit changed a masked history:\n%s", cmp.Diff(out, again))
	}

	// When masking is not enough, the oldest groups go too.
	tight := Fit(msgs, plan.ContextSettings{Strategy: ObservationMasking, TokenBudget: 1100, Recent: 3})
	if estimate(tight) > 1100 || !cmp.Equal(tight[0], msgs[0]) || !cmp.Equal(tight[len(tight)-1], msgs[len(msgs)-1]) {
		t.Errorf("tight fit: %d tokens, %v", estimate(tight), tight)
	}
}

func TestAnchoredSummary(t *testing.T) {
	msgs := conv(sys("system"), user("the task"),
		exchange(400, "calculator"),
		asst("thinking"),
		exchange(400, "calculator", "web_search"),
		user("more"),
		exchange(400, "fetch"))
	s := plan.ContextSettings{Strategy: AnchoredSummary, TokenBudget: 200, Recent: 3}
	out := Fit(msgs, s)
	want := conv(sys("system"), user("the task"),
		user("[6 earlier messages omitted: tool calls calculator x2, web_search x1]"),
		user("more"), exchange(400, "fetch"))
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// The conversation goes on; the next fit folds the old note into the new
	// one, so one note covers the whole omitted history.
	next := append(out, exchange(400, "fetch")...)
	next = append(next, asst("x"))
	out2 := Fit(next, s)
	want2 := conv(sys("system"), user("the task"),
		user("[9 earlier messages omitted: tool calls calculator x2, fetch x1, web_search x1]"),
		exchange(400, "fetch"), asst("x"))
	if diff := cmp.Diff(want2, out2); diff != "" {
		t.Errorf("second fit (-want +got):\n%s", diff)
	}
	if got := formatNote(1, nil); got != "[1 earlier message omitted]" {
		t.Errorf("singular note %q", got)
	}
}

func TestAnchoredSummaryShrinksRecent(t *testing.T) {
	msgs := conv(sys("system"), user("task"), exchange(4000, "a"), exchange(4000, "b"), exchange(4000, "c"))
	out := Fit(msgs, plan.ContextSettings{Strategy: AnchoredSummary, TokenBudget: 1100, Recent: 6})
	want := conv(sys("system"), user("task"), user("[4 earlier messages omitted: tool calls a x1, b x1]"), exchange(4000, "c"))
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAnchoredSummaryTaskLast: when the first user message is also the
// last one (only earlier notes or orphans before it), the note goes before
// it, and the conversation still ends with the message the model answers.
func TestAnchoredSummaryTaskLast(t *testing.T) {
	msgs := conv(sys("system"), result("ghost", strings.Repeat("g", 400)),
		user("[7 earlier messages omitted: tool calls a x2]"), user("the task"))
	out := Fit(msgs, plan.ContextSettings{Strategy: AnchoredSummary, TokenBudget: 30, Recent: 4})
	want := conv(sys("system"), user("[7 earlier messages omitted: tool calls a x2]"), user("the task"))
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestOrphansDropped(t *testing.T) {
	msgs := conv(sys("system"), result("ghost", strings.Repeat("g", 400)), user("task"), exchange(400, "a"), exchange(400, "b"))
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
		out := Fit(msgs, plan.ContextSettings{Strategy: strategy, TokenBudget: estimate(msgs) - 1, Recent: 4})
		if err := validSequence(out); err != nil {
			t.Errorf("%s: %v", strategy, err)
		}
	}
}

// validSequence checks the wire format's pairing rule: every tool message
// answers a call of the assistant message before its run of tool messages,
// and every call is answered.
func validSequence(msgs []provider.Message) error {
	var open map[string]bool
	for i, m := range msgs {
		if m.Role == provider.ToolRole {
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: tool result %q without its call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return fmt.Errorf("message %d: calls %v left unanswered", i, open)
		}
		open = nil
		if m.Role == provider.Assistant && len(m.ToolCalls) > 0 {
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("calls %v left unanswered at the end", open)
	}
	return nil
}

var generated = regexp.MustCompile(`^\[(observation masked: \d+ tokens|\d+ earlier messages? omitted.*)\]$`)

// Random valid conversations, every strategy, many budgets: the output is a
// valid sequence, keeps the system messages and the last exchange, is made
// of input messages (or placeholders and notes), and respects the budget
// whenever the parts Fit must keep fit in it.
func TestInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tools := []string{"calculator", "web_search", "fetch", "read_file"}
	for iter := range 400 {
		msgs := []provider.Message{sys("you are a test")}
		if rng.IntN(3) == 0 {
			msgs = append(msgs, sys("second system message"))
		}
		msgs = append(msgs, user(strings.Repeat("u", rng.IntN(400))))
		for range rng.IntN(30) {
			switch rng.IntN(3) {
			case 0:
				msgs = append(msgs, user(strings.Repeat("q", rng.IntN(200))))
			case 1:
				msgs = append(msgs, asst(strings.Repeat("a", rng.IntN(200))))
			default:
				var names []string
				for _, n := range tools {
					if rng.IntN(2) == 0 {
						names = append(names, n)
					}
				}
				if len(names) == 0 {
					names = tools[:1]
				}
				msgs = append(msgs, exchange(rng.IntN(2000), names...)...)
			}
		}
		if err := validSequence(msgs); err != nil {
			t.Fatalf("generator: %v", err)
		}
		for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
			s := plan.ContextSettings{Strategy: strategy, TokenBudget: 50 + rng.IntN(estimate(msgs)+50), Recent: rng.IntN(8)}
			out := Fit(msgs, s)
			name := fmt.Sprintf("case %d %s budget %d recent %d", iter, strategy, s.TokenBudget, s.Recent)
			// Known estimates give the same result and are left as they were.
			tokens := estimates(msgs)
			if with := FitTokens(msgs, s, tokens); !cmp.Equal(with, out) {
				t.Fatalf("%s: FitTokens differs from Fit", name)
			}
			if !cmp.Equal(tokens, estimates(msgs)) {
				t.Fatalf("%s: FitTokens modified its tokens", name)
			}
			if err := validSequence(out); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c := split(msgs, estimates(msgs))
			if !cmp.Equal(out[:c.head], msgs[:c.head]) {
				t.Fatalf("%s: system messages not kept", name)
			}
			last := c.groups[len(c.groups)-1]
			if !cmp.Equal(out[len(out)-(last.end-last.start):], msgs[last.start:last.end]) && strategy != ObservationMasking {
				t.Fatalf("%s: last exchange not kept", name)
			}
			inputs := map[string]bool{}
			for _, m := range msgs {
				inputs[fmt.Sprint(m)] = true
			}
			for i, m := range out {
				if !inputs[fmt.Sprint(m)] && !generated.MatchString(m.Content) {
					t.Fatalf("%s: message %d is neither from the input nor generated: %+v", name, i, m)
				}
			}
			must := c.headTokens + last.tokens
			if strategy == AnchoredSummary {
				must += c.groups[0].tokens + 40 // the first user message and a note
			}
			if must <= s.TokenBudget && estimate(out) > s.TokenBudget {
				for _, m := range out {
					t.Logf("%d %s %q %d", MessageTokens(m), m.Role, m.Content[:min(len(m.Content), 90)], len(m.ToolCalls))
				}
				t.Fatalf("%s: %d tokens over budget %d", name, estimate(out), s.TokenBudget)
			}
		}
	}
}

func TestResultDoesNotAliasInput(t *testing.T) {
	msgs := conv(sys("s"), user("task"), exchange(4000, "a"), exchange(4000, "b"))
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
		out := Fit(msgs, plan.ContextSettings{Strategy: strategy, TokenBudget: 1200, Recent: 2})
		if cap(out) != len(out) {
			t.Errorf("%s: result has spare capacity %d", strategy, cap(out)-len(out))
		}
		out[0].Content = "changed"
		if msgs[0].Content != "s" {
			t.Fatalf("%s: result shares the input's backing array", strategy)
		}
	}
}

// The engine replaces its history with Fit's result before every call: over
// 1,000 iterations the history stays bounded by the budget, not by the run.
func TestFlatOverLongRun(t *testing.T) {
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
		t.Run(strategy, func(t *testing.T) {
			s := plan.ContextSettings{Strategy: strategy, TokenBudget: 4000, Recent: 6}
			history := conv(sys("system prompt"), user("a long task"))
			appended := 0
			maxLen, maxCap, firstHalf := 0, 0, 0
			for i := range 1000 {
				if i == 500 {
					firstHalf = maxLen
				}
				turn := exchange(200+i%7*300, "calculator", "web_search")
				history = append(history, turn...)
				appended += len(turn)
				history = Fit(history, s)
				if est := estimate(history); est > s.TokenBudget {
					t.Fatalf("iteration %d: %d tokens over %d", i, est, s.TokenBudget)
				}
				maxLen, maxCap = max(maxLen, len(history)), max(maxCap, cap(history))
			}
			// Every message costs at least MessageOverhead, so the budget
			// bounds the length; and the second half of the run holds no
			// more than the first.
			if maxLen > s.TokenBudget/MessageOverhead || maxCap > 3*maxLen || maxLen > firstHalf {
				t.Errorf("history grew: up to %d messages (%d in the first half), capacity %d", maxLen, firstHalf, maxCap)
			}
			if strategy == AnchoredSummary {
				kept := len(history) - 3 // system, task, note
				want := fmt.Sprintf("[%d earlier messages omitted: tool calls calculator x%d, web_search x%d]",
					appended-kept, (appended-kept)/3, (appended-kept)/3)
				if history[2].Content != want {
					t.Errorf("note %q, want %q", history[2].Content, want)
				}
			}
		})
	}
}

func FuzzFit(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 2, 1}, 100, 3)
	f.Add([]byte{3, 3, 3, 1, 0, 2}, 10, 0)
	f.Add([]byte{0, 0, 1, 2, 3, 3, 2, 3, 1, 4, 2, 3, 1, 2, 3}, 60, 2)
	f.Add([]byte{0, 6, 2, 3, 7, 2, 3, 4, 1, 2, 3, 3, 1}, 30, 4)
	f.Fuzz(func(t *testing.T, shape []byte, budget, recent int) {
		// Any message shapes, valid or not: Fit must not panic, and must keep
		// every promise of the package comment.
		// No two messages are alike, so checkFit can tell which of the
		// input's each of the result's is.
		var msgs []provider.Message
		for i, b := range shape {
			switch b % 5 {
			case 0:
				msgs = append(msgs, sys(fmt.Sprint("s", i)))
			case 1:
				msgs = append(msgs, user(fmt.Sprint(i, strings.Repeat("u", int(b)))))
			case 2:
				msgs = append(msgs, calls(fmt.Sprint("t", i)))
			case 3:
				msgs = append(msgs, result(fmt.Sprint("t", i-1), fmt.Sprint(i, strings.Repeat("r", int(b)*4))))
			case 4:
				msgs = append(msgs, user(fmt.Sprintf("[%d earlier messages omitted: tool calls x x2]", i+3)))
			}
		}
		for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
			s := plan.ContextSettings{Strategy: strategy, TokenBudget: budget, Recent: recent}
			out := Fit(msgs, s)
			checkFit(t, msgs, s, out)
			// A fitted conversation is a fixed point: fitting it again, as
			// the next call does before anything is appended, changes
			// nothing.
			if again := Fit(out, s); !cmp.Equal(again, out, cmpopts.EquateEmpty()) {
				t.Fatalf("%s: fitting the fitted conversation again changed it:\n%s", strategy, cmp.Diff(out, again, cmpopts.EquateEmpty()))
			}
		}
	})
}

// checkFit checks Fit's promises, as the package comment and Fit's doc
// state them, on in and Fit's result out. It groups messages itself, by
// those words: a group is an assistant message with tool calls and the tool
// results right after it, or one other message; tool results after no tool
// call are orphans.
func checkFit(t *testing.T, in []provider.Message, s plan.ContextSettings, out []provider.Message) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s, budget %d, recent %d: %s\nin:  %v\nout: %v", s.Strategy, s.TokenBudget, s.Recent, fmt.Sprintf(format, args...), shapeOf(in), shapeOf(out))
	}
	if s.TokenBudget <= 0 || estimate(in) <= s.TokenBudget {
		if len(out) != len(in) || len(in) > 0 && &out[0] != &in[0] {
			fail("within budget, but not the input itself")
		}
		return
	}
	// Shares no backing array with the input.
	if len(out) > 0 {
		whole := in[:cap(in)]
		for i := range whole {
			if &whole[i] == &out[0] || &whole[i] == &out[len(out)-1] {
				fail("the result shares the input's backing array")
			}
		}
	}
	head := 0
	for head < len(in) && in[head].Role == provider.System {
		head++
	}
	if len(out) < head || !cmp.Equal(out[:head], in[:head]) {
		fail("the leading system messages are not kept")
	}
	var groups []span
	for i := head; i < len(in); {
		end := i + 1
		if in[i].Role == provider.Assistant && len(in[i].ToolCalls) > 0 || in[i].Role == provider.ToolRole {
			for end < len(in) && in[end].Role == provider.ToolRole {
				end++
			}
		}
		if in[i].Role != provider.ToolRole {
			groups = append(groups, span{i, end})
		}
		i = end
	}

	// Every message of out is one of in, in order (a tool result perhaps
	// masked), except for one note anchored_summary may add.
	from := make([]int, len(out)) // index in in; -1: the note
	same := func(o, m provider.Message) bool {
		if s.Strategy == ObservationMasking && m.Role == provider.ToolRole && strings.HasPrefix(o.Content, maskPrefix) {
			o.Content = m.Content
		}
		return cmp.Equal(o, m)
	}
	match := func(note int) bool {
		j := 0
		for k, o := range out {
			if k == note {
				from[k] = -1
				continue
			}
			for j < len(in) && !same(o, in[j]) {
				j++
			}
			if j == len(in) {
				return false
			}
			from[k] = j
			j++
		}
		return true
	}
	matched := match(-1)
	for k := 0; !matched && s.Strategy == AnchoredSummary && k < len(out); k++ {
		matched = isNote(out[k]) && match(k)
	}
	if !matched {
		fail("the result is not the input's messages in order (with at most one note)")
	}

	kept := map[int]bool{}
	for _, j := range from {
		kept[j] = true
	}
	for k, o := range out {
		switch {
		case o.Role == provider.ToolRole && (k == 0 || out[k-1].Role != provider.ToolRole && len(out[k-1].ToolCalls) == 0):
			fail("out[%d] is a tool result that follows no tool call", k)
		case from[k] >= 0 && o.Content != in[from[k]].Content && from[k] >= groups[len(groups)-1].start:
			fail("out[%d], of the last exchange, is masked", k)
		}
	}
	for _, g := range groups {
		n := 0
		for j := g.start; j < g.end; j++ {
			if kept[j] {
				n++
			}
		}
		if n != 0 && n != g.end-g.start {
			fail("messages %d to %d, an assistant tool call and its results, are split: %d of them kept", g.start, g.end-1, n)
		}
	}
	if len(groups) > 0 {
		last := groups[len(groups)-1]
		if !kept[last.start] || from[len(out)-1] != last.end-1 {
			fail("the last exchange (messages %d to %d) does not end the result", last.start, last.end-1)
		}
	}

	// Over budget only when nothing more could go: the head, the last
	// exchange and, for anchored_summary, the first user message and the
	// note.
	if estimate(out) > s.TokenBudget {
		extra := 0 // groups kept besides the last
		notes := 0 // of them, notes (the note Fit wrote may equal one)
		for i, g := range groups[:max(len(groups)-1, 0)] {
			if kept[g.start] && !(s.Strategy == AnchoredSummary && i == firstUser(in, groups)) {
				extra++
				if isNote(in[g.start]) {
					notes++
				}
			}
		}
		if s.Strategy == AnchoredSummary && notes == 1 && !slices.Contains(from, -1) {
			extra--
		}
		if extra > 0 {
			fail("over budget (%d tokens) while %d older groups are kept", estimate(out), extra)
		}
	}
}

// span is a group of messages as checkFit sees them: in[start:end].
type span struct{ start, end int }

// firstUser is the index in groups of the first user message that is no
// note, or -1.
func firstUser(in []provider.Message, groups []span) int {
	for i, g := range groups {
		if in[g.start].Role == provider.User && !isNote(in[g.start]) {
			return i
		}
	}
	return -1
}

// shapeOf writes a conversation as its roles: S system, U user, N note,
// A(n) assistant with n tool calls, A assistant, T tool result, M masked.
func shapeOf(msgs []provider.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch {
		case m.Role == provider.System:
			b.WriteString("S")
		case isNote(m):
			b.WriteString("N")
		case m.Role == provider.User:
			b.WriteString("U")
		case m.Role == provider.Assistant && len(m.ToolCalls) > 0:
			fmt.Fprintf(&b, "A%d", len(m.ToolCalls))
		case m.Role == provider.Assistant:
			b.WriteString("A")
		case strings.HasPrefix(m.Content, maskPrefix):
			b.WriteString("M")
		default:
			b.WriteString("T")
		}
		b.WriteString(" ")
	}
	return b.String()
}

func BenchmarkFit(b *testing.B) {
	history := conv(sys("system prompt"), user("a long task"))
	for i := range 100 {
		history = append(history, exchange(800+i%5*400, "calculator", "web_search")...)
	}
	b.Run("estimate_only", func(b *testing.B) {
		for b.Loop() {
			estimate(history)
		}
	})
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
		b.Run(strategy, func(b *testing.B) {
			s := plan.ContextSettings{Strategy: strategy, TokenBudget: 8000, Recent: 6}
			b.ReportAllocs()
			for b.Loop() {
				Fit(history, s)
			}
		})
	}
}

func estimates(msgs []provider.Message) []int {
	out := make([]int, len(msgs))
	for i, m := range msgs {
		out[i] = MessageTokens(m)
	}
	return out
}

// BenchmarkFitRatio interleaves Fit with estimate of the same history and
// reports the ratio of their medians ("x-estimate"): what fitting costs
// beyond reading the conversation once.
func BenchmarkFitRatio(b *testing.B) {
	history := conv(sys("system prompt"), user("a long task"))
	for i := range 100 {
		history = append(history, exchange(800+i%5*400, "calculator", "web_search")...)
	}
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
		b.Run(strategy, func(b *testing.B) {
			s := plan.ContextSettings{Strategy: strategy, TokenBudget: 8000, Recent: 6}
			var fitT, estT []time.Duration
			for b.Loop() {
				t0 := time.Now()
				Fit(history, s)
				t1 := time.Now()
				estimate(history)
				fitT = append(fitT, t1.Sub(t0))
				estT = append(estT, time.Since(t1))
			}
			b.ReportMetric(float64(median(fitT)), "p50-ns")
			b.ReportMetric(float64(median(fitT))/float64(median(estT)), "x-estimate")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// The heap, not just the slice length, stays flat: what Fit drops becomes
// garbage. A history that kept its dropped turns would hold 1,000 × 8 KB.
func TestFlatHeapOverLongRun(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, strategy := range []string{SlidingWindow, ObservationMasking, AnchoredSummary} {
		s := plan.ContextSettings{Strategy: strategy, TokenBudget: 8000, Recent: 6}
		history := conv(sys("system prompt"), user("a long task"))
		var at250 uint64
		for i := range 1000 {
			if i == 250 {
				at250 = heap()
			}
			history = append(history, exchange(4096, "calculator", "web_search")...)
			history = Fit(history, s)
		}
		if grew := int64(heap()) - int64(at250); grew > 1<<20 {
			t.Errorf("%s: heap grew by %d bytes over 750 iterations", strategy, grew)
		}
		runtime.KeepAlive(history)
	}
}
