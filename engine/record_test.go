package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/provider"
)

// TestDataEncoderIsMarshal checks that record's reused encoder writes the
// bytes json.Marshal writes, event after event.
func TestDataEncoderIsMarshal(t *testing.T) {
	d := dataEncoders.Get().(*dataEncoder)
	defer dataEncoders.Put(d)
	values := []any{
		reasoningData{Message: provider.Message{Role: provider.Assistant, Content: "<a & b>\u2028 \"q\"\n", ToolCalls: []provider.ToolCall{{ID: "1", Name: "calc", Arguments: `{"x":1}`}}}},
		observationsData{Messages: []provider.Message{{Role: provider.ToolRole, Content: "42", Name: "calc", ToolCallID: "1"}}},
		map[string]any{"raw": json.RawMessage(`{ "a" : [1, 2] }`), "s": "x\xffy"},
		strings.Repeat("long ", 20000),
		"short",
		nil,
	}
	for i, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.encode(v)
		if err != nil || string(got) != string(want) {
			t.Fatalf("value %d: encode gave %q, %v; json.Marshal %q", i, got, err, want)
		}
	}
	if _, err := d.encode(func() {}); err == nil {
		t.Fatal("encoding a func did not fail")
	}
}
