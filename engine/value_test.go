package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// decodedEqual compares a value with what its data decodes to, as far as a
// reader can tell them apart: an empty slice and a missing one are the
// same, and a raw JSON member is the same JSON whatever its white space.
var decodedEqual = []cmp.Option{
	cmp.FilterValues(func(x, y any) bool {
		vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
		return vx.Type() != reflect.TypeFor[json.RawMessage]() && (vx.Kind() == reflect.Slice || vx.Kind() == reflect.Map) &&
			vx.Len() == 0 && vy.Len() == 0
	}, cmp.Comparer(func(_, _ any) bool { return true })),
	cmp.Transformer("compact", func(m json.RawMessage) string {
		var b bytes.Buffer
		if json.Compact(&b, m) != nil {
			return string(m)
		}
		return b.String()
	}),
}

// checkValue holds an event's Value to its Data: set only for the event
// types shown on every round, and then what Data decodes to.
func checkValue(t *testing.T, ev Event) {
	t.Helper()
	if ev.Value == nil {
		return
	}
	switch ev.Type {
	case journal.ReasoningComplete, journal.PolicyEvaluated, journal.ToolResult:
	default:
		t.Fatalf("%s has a Value", ev.Type)
	}
	decoded := reflect.New(reflect.TypeOf(ev.Value))
	if err := json.Unmarshal(ev.Data, decoded.Interface()); err != nil {
		t.Fatalf("%s: %v", ev.Type, err)
	}
	if diff := cmp.Diff(decoded.Elem().Interface(), ev.Value, decodedEqual...); diff != "" {
		t.Errorf("%s: Value is not what Data decodes to (-data +value):\n%s", ev.Type, diff)
	}
}

// A run's events carry their data already decoded for the three event
// types a terminal shows on every round, and it is what the data says.
func TestEventValue(t *testing.T) {
	srv := fakeserver.New(t, fakeserver.WithReplies(
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{ "expression" : "6*7" }`}}},
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c2", Name: "calculator", Arguments: `{"expression":"1/0"}`}}},
		fakeserver.Text("<42> & \u2028 done")))
	p, dir := fixture{"main.hcl": openaiHCL(srv.URL())}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	if res := mustRun(t, e, "a", "what is 6*7?", RunOptions{}); res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	with := map[string]int{}
	for _, ev := range rec.events {
		checkValue(t, ev)
		if ev.Value != nil {
			with[ev.Type]++
		}
	}
	if want := map[string]int{journal.ReasoningComplete: 3, journal.PolicyEvaluated: 3, journal.ToolResult: 2}; !reflect.DeepEqual(with, want) {
		t.Errorf("events with a Value: %v, want %v", with, want)
	}
}

// An event whose data was redacted, or whose text is not valid UTF-8 (the
// encoding replaces it), has no Value: a reader decodes the data, and sees
// what the journal holds.
func TestEventValueNotWhenDataDiffers(t *testing.T) {
	const key = "sk-test-5f8e2a91c4"
	srv := fakeserver.New(t, fakeserver.WithReplies(
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"` + key + `"}`}}},
		fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "c2", Name: "bytes", Arguments: `{}`}}},
		fakeserver.Text("done")))
	hcl := strings.Replace(openaiHCL(srv.URL()), `name     = "fake-model"`, `name     = "fake-model"
  api_key_env = "FAKE_KEY"`, 1)
	hcl = strings.Replace(hcl, `tools    = [tool.calculator]`, `tools    = [tool.calculator, tool.bytes]`, 1)
	hcl = strings.Replace(hcl, `allow = ["calculator"]`, `allow = ["calculator", "bytes"]`, 1)
	hcl += `
tool "bytes" {
  description = "prints a byte that is not UTF-8"
  parameters  = { type = "object" }
  command {
    argv = ["printf", "a\\377b"]
  }
}
`
	p, dir := fixture{"main.hcl": hcl}.compile(t)
	e, rec := newEngine(t, p, dir, func(o *Options) {
		o.LookupEnv = func(n string) (string, bool) { return key, n == "FAKE_KEY" }
	})
	mustRun(t, e, "a", "go", RunOptions{})
	var saw []string
	for _, ev := range rec.events {
		checkValue(t, ev)
		redacted := ev.Iteration == 1 && (ev.Type == journal.ReasoningComplete || ev.Type == journal.PolicyEvaluated)
		coerced := ev.Iteration == 2 && ev.Type == journal.ToolResult
		if redacted || coerced {
			saw = append(saw, ev.Type)
			if ev.Value != nil {
				t.Errorf("iteration %d: %s has a Value: %s", ev.Iteration, ev.Type, ev.Data)
			}
			if coerced && !strings.Contains(string(ev.Data), `a\ufffdb`) {
				t.Errorf("tool_result %s, want the output coerced", ev.Data)
			}
		}
	}
	if len(saw) != 3 {
		t.Errorf("saw %v", saw)
	}
}

// FuzzEventValue holds the rule Event.Value rests on: when the encoding of
// an event's data has no \ufffd in it, decoding it gives the data back,
// whatever text the model, a tool or a policy put in it.
func FuzzEventValue(f *testing.F) {
	f.Add("calculator", `{"expression":"1+1"}`, "2", "allowed <&>")
	f.Add("a\xffb", `{"k": "v\u2028"}`, "\x00\x1b[2J", `\ufffd`)
	f.Add("", "[]", "", "")
	f.Fuzz(func(t *testing.T, name, args, text, reason string) {
		raw := json.RawMessage(args)
		if !json.Valid(raw) {
			raw = nil
		}
		action := policy.Action{Type: policy.ToolCall, Tool: name, CallID: text, Arguments: raw, Tags: []string{reason}}
		for _, data := range []any{
			reasoningData{
				ReasoningCompleteData: journal.ReasoningCompleteData{Model: name, Content: text, ToolCalls: []provider.ToolCall{{ID: text, Name: name, Arguments: args}}, Actions: []policy.Action{action}, Reasoning: reason, FinishReason: reason},
				Message:               provider.Message{Role: provider.Assistant, Content: text},
			},
			journal.PolicyEvaluatedData{Decisions: []journal.GateRecord{{
				Action: action, RawArguments: raw,
				Decision: policy.Decision{Outcome: policy.Deny, Reason: reason, Policy: name, Arguments: raw},
				Trail:    []policy.Decision{{Outcome: policy.NotApplicable, Reason: text}},
			}}, Denied: 1},
			journal.ToolResultData{CallID: text, Tool: name, Output: args, Error: reason, ErrorKind: text},
		} {
			b, err := (&dataEncoder{}).encodeNew(data)
			if err != nil {
				t.Fatal(err)
			}
			v := shownValue(data)
			if v == nil {
				t.Fatalf("%T has no shown value", data)
			}
			if !decodesTo(b) {
				continue
			}
			checkValue(t, Event{Type: typeOf(v), Data: b, Value: v})
		}
	})
}

func typeOf(v any) string {
	switch v.(type) {
	case journal.ReasoningCompleteData:
		return journal.ReasoningComplete
	case journal.PolicyEvaluatedData:
		return journal.PolicyEvaluated
	}
	return journal.ToolResult
}

// encodeNew is encode on a fresh encoder, as the pool makes them.
func (d *dataEncoder) encodeNew(v any) ([]byte, error) {
	d.enc = json.NewEncoder(&d.buf)
	b, err := d.encode(v)
	return bytes.Clone(b), err
}
