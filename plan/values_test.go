package plan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A decoded plan holds the JSON values of the compiled plan byte for byte,
// not Encode's indented copies: a run of a saved (or sent) plan must size
// a tool's schema as a run of the compiled plan does.
func TestDecodeKeepsCompactValues(t *testing.T) {
	p := &Plan{
		FormatVersion: FormatVersion,
		Tools:         []Tool{{Address: "tool.t", Parameters: json.RawMessage(`{"properties":{"x":{"type":"string"}},"type":"object"}`)}},
		Variables:     []Variable{{Name: "v", Type: "list(number)", Value: json.RawMessage(`[1,2,{"a":"<b>"}]`)}},
		PolicyTests:   []PolicyTest{{Address: "policy_test.x", Action: json.RawMessage(`{"tool":"t","type":"tool_call"}`)}},
	}
	b, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want json.RawMessage }{
		{got.Tools[0].Parameters, p.Tools[0].Parameters},
		{got.Variables[0].Value, p.Variables[0].Value},
		{got.PolicyTests[0].Action, p.PolicyTests[0].Action},
	} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("decoded %s, compiled %s", c.got, c.want)
		}
	}
	again, err := Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Error("a decoded plan encodes to other bytes")
	}
}
