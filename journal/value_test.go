package journal

import (
	"bytes"
	"encoding/json"
	"testing"
)

// An event that carries its data already decoded hands that value to a
// Decode into its type, without reading Data; a Decode into another type
// reads Data as ever.
func TestDecodeUsesValue(t *testing.T) {
	value := ToolResultData{CallID: "c1", Tool: "calculator", Output: "from the value"}
	ev := Event{Type: ToolResult, Data: json.RawMessage(`{"call_id":"c1","tool":"calculator","output":"from data"}`), Value: value}
	var got ToolResultData
	if err := ev.Decode(&got); err != nil || got != value {
		t.Fatalf("Decode = %+v, %v; want the value", got, err)
	}
	var m map[string]any
	if err := ev.Decode(&m); err != nil || m["output"] != "from data" {
		t.Fatalf("Decode into a map = %v, %v; want the data", m, err)
	}
	var other StartedData
	if err := ev.Decode(&other); err != nil {
		t.Fatalf("Decode into another type: %v", err)
	}
	var nilPtr *ToolResultData
	if err := ev.Decode(nilPtr); err == nil {
		t.Error("Decode into a nil pointer succeeded")
	}
}

// The value is never written: the line is the same with or without it.
func TestValueIsNotWritten(t *testing.T) {
	data := json.RawMessage(`{"call_id":"c1","tool":"calculator","output":"2"}`)
	line := func(v any) []byte {
		w := mustCreate(t, t.TempDir(), "run", SyncBackground)
		if err := w.Append(Event{Type: ToolResult, Data: data, Value: v}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		evs, err := ReadFile(w.Path())
		if err != nil || len(evs) != 1 {
			t.Fatalf("%d events, %v", len(evs), err)
		}
		if evs[0].Value != nil {
			t.Errorf("an event read back has a Value: %v", evs[0].Value)
		}
		return evs[0].Data
	}
	if a, b := line(nil), line(ToolResultData{Output: "other"}); !bytes.Equal(a, b) {
		t.Errorf("data %s with a value, %s without", b, a)
	}
}
