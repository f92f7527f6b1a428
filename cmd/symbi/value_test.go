package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
)

// The run printer shows an event the same from its already decoded Value
// as from its data: white space in raw JSON, empty lists and text a
// terminal must not interpret included.
func TestRunPrinterSameFromValue(t *testing.T) {
	args := `{ "expression" : "6*7",  "note": "\u001b[2J<b>&" }`
	hostile := "line one\nline two\t\x1b]0;title\x07 \u202e<&>"
	action := policy.Action{Type: policy.ToolCall, Tool: "calculator", CallID: "c1", Arguments: json.RawMessage(args), Tags: []string{}}
	for _, v := range []any{
		journal.ReasoningCompleteData{Model: "model.m", ToolCalls: []provider.ToolCall{{ID: "c1", Name: "calculator", Arguments: args}, {ID: "c2", Name: hostile, Arguments: "not json"}}, Actions: []policy.Action{action}},
		journal.PolicyEvaluatedData{Decisions: []journal.GateRecord{
			{Action: action, Decision: policy.Decision{Outcome: policy.Allow, Policy: "policy.open", Reason: hostile}},
			{Action: policy.Action{Type: policy.ToolCall, Tool: hostile}, Decision: policy.Decision{Outcome: policy.Deny, Reason: hostile, Policy: "policy.p"}, Trail: []policy.Decision{}},
			{Action: policy.Action{Type: policy.Respond, Content: hostile}, Decision: policy.Decision{Outcome: policy.Allow}},
		}, Denied: 1},
		journal.ToolResultData{CallID: "c1", Tool: "calculator", Output: hostile},
		journal.ToolResultData{CallID: "c1", Tool: hostile, Error: hostile, ErrorKind: "timeout"},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		typ := map[string]string{"journal.ReasoningCompleteData": journal.ReasoningComplete, "journal.PolicyEvaluatedData": journal.PolicyEvaluated, "journal.ToolResultData": journal.ToolResult}[typeName(v)]
		show := func(ev engine.Event) string {
			var out bytes.Buffer
			p := newRunPrinter(&out, &out, false)
			p.event(ev)
			p.close()
			return out.String()
		}
		fromData := show(engine.Event{Type: typ, Data: data})
		fromValue := show(engine.Event{Type: typ, Data: data, Value: v})
		if fromData == "" || fromValue != fromData {
			t.Errorf("%s:\nfrom data:  %q\nfrom value: %q", typ, fromData, fromValue)
		}
		// The value is what is shown: with other data, the lines stay.
		if other := show(engine.Event{Type: typ, Data: json.RawMessage(`{}`), Value: v}); other != fromValue {
			t.Errorf("%s: the printer decoded the data although the event had a Value", typ)
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case journal.ReasoningCompleteData:
		return "journal.ReasoningCompleteData"
	case journal.PolicyEvaluatedData:
		return "journal.PolicyEvaluatedData"
	}
	return "journal.ToolResultData"
}
