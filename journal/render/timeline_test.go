package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
)

// Every timeline line is one line of printable text, whatever a tool or
// the model put in the event: runs show and :journal print it as it is.
func TestTimelineEscapesHostileText(t *testing.T) {
	data := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	evs := []journal.Event{
		{Seq: 1, Type: journal.Started, Data: data(journal.StartedData{Agent: "agent.a", Input: "go"})},
		{Seq: 2, Type: journal.ApprovalRequested, Data: data(journal.ApprovalRequestedData{Tool: "flaky", Arguments: json.RawMessage(`{"a":"\u202e"}`),
			ArgumentsDigest: "sha256:00", Reason: "flaky failed (\x1b[2J\x1b[Hall clear); run it again?"})},
		{Seq: 3, Type: journal.ApprovalRejected, Data: data(journal.ApprovalRejectedData{Tool: "flaky", RequestID: "r1", Reason: "no proof", By: "lead\n  +0s #9 forged line"})},
		{Seq: 4, Type: journal.ApprovalDecided, Data: data(journal.ApprovalDecidedData{Tool: "flaky", By: "e2e", Reason: "\x1b]0;title\x07"})},
		{Seq: 5, Type: journal.ToolResult, Data: data(journal.ToolResultData{Tool: "flaky", Error: "exit 1: \x1b[2J", ErrorKind: "error"})},
	}
	out := Timeline(evs)
	if n := strings.Count(out, "\n"); n != len(evs)+1 {
		t.Errorf("%d lines for %d events:\n%s", n, len(evs), out)
	}
	for _, want := range []string{
		`flaky {"a":"\u202e"} waits for a person: flaky failed (\x1b[2J\x1b[Hall clear); run it again? (arguments sha256:00)`,
		`flaky: ignored decision on request r1: no proof (claimed by "lead\n  +0s #9 forged line")`,
		`flaky denied by e2e: \x1b]0;title\a`,
		`flaky failed (error): exit 1: \x1b[2J`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("the timeline holds a raw control character:\n%q", out)
	}
}

// Every event type the journal knows is described from its typed data:
// only a type this symbi does not know is shown as its raw data.
func TestDescribeKnowsEveryEventType(t *testing.T) {
	for _, typ := range journal.EventTypes() {
		ev := journal.Event{Seq: 1, Type: typ, Data: json.RawMessage(`{"zzz":1}`)}
		if got := Describe(ev); strings.Contains(got, "zzz") {
			t.Errorf("%s is shown as its raw data: %s", typ, got)
		}
	}
	if got := Describe(journal.Event{Type: "from_the_future", Data: json.RawMessage(`{"a":1}`)}); got != `"{\"a\":1}"` {
		t.Errorf("an unknown event: %s", got)
	}
}

func TestDescribeOfTheLesserEvents(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		data string
		want string
	}{
		{journal.CandidateStarted, `{"index":2,"vary":{"temperature":0.5,"seed":7}}`, `candidate 2 with {"seed":7,"temperature":0.5}`},
		{journal.KnowledgeInjected, `{"store":"knowledge.facts","query":"moons","facts":["Earth has one moon"]}`, `1 fact from knowledge.facts for "moons"`},
		{journal.Prehydrated, `{"references":[{"kind":"file","value":"notes.md","tool":"read_file","tokens":12},{"kind":"url","value":"http://x","error":"refused"}],"tokens":12}`,
			`2 references, 12 tokens: file "notes.md", 12 tokens; url "http://x" failed: refused`},
		{journal.ApprovalDecided, `{"tool":"rm","approved":true,"by":"ana"}`, `rm approved by ana`},
		{journal.ApprovalDecided, `{"tool":"rm","approved":false,"by":"timeout","reason":"nobody answered","timed_out":true}`, `rm denied by timeout: nobody answered`},
	} {
		if got := Describe(journal.Event{Type: tc.typ, Data: json.RawMessage(tc.data)}); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.typ, got, tc.want)
		}
	}
}
