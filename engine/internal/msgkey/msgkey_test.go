package msgkey

import (
	"testing"

	"github.com/symbi-dev/symbi/provider"
)

func TestKeyIs(t *testing.T) {
	one := provider.Message{Role: provider.Assistant, Content: "a", ToolCalls: []provider.ToolCall{{Name: "calc", Arguments: `{"x":1}`}}}
	two := provider.Message{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{Name: "a", Arguments: "1"}, {Name: "b", Arguments: "2"}}}
	plain := provider.Message{Role: provider.ToolRole, Content: "42", Name: "calc"}
	for _, m := range []provider.Message{one, two, plain} {
		k := Of(m)
		if !k.Is(m) {
			t.Errorf("%+v is not its own key", m)
		}
		copied := m
		copied.ToolCalls = append([]provider.ToolCall(nil), m.ToolCalls...)
		if !k.Is(copied) {
			t.Errorf("an equal copy of %+v does not match", m)
		}
	}
	kp, k1 := Of(plain), Of(one)
	if kp.Is(one) || k1.Is(two) {
		t.Error("different messages match")
	}
	changed := plain
	changed.Name = "search"
	if kp.Is(changed) {
		t.Error("a changed name matches")
	}
	// The key keeps its own copy of two or more tool calls: the message's
	// may be changed in place afterwards.
	k := Of(two)
	two.ToolCalls[1].Arguments = "3"
	if k.Is(two) {
		t.Error("a tool call changed in place still matches")
	}
	k = Of(one)
	one.ToolCalls[0].Arguments = `{"x":2}`
	if k.Is(one) {
		t.Error("the only tool call changed in place still matches")
	}
}
