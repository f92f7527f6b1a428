package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/provider"
)

func TestKnowledgeInjectionReplacesPrevious(t *testing.T) {
	conv := []provider.Message{
		{Role: provider.System, Content: "You are helpful."},
		{Role: provider.User, Content: "How many moons has Earth?"},
	}
	facts := []knowledge.Scored{{Fact: knowledge.Fact{Subject: "Earth", Predicate: "has", Object: "one moon", Confidence: 0.95, CreatedAt: time.Unix(0, 0)}, Score: 0.8}}
	conv = withKnowledge(conv, formatFacts(facts))
	if len(conv) != 3 || conv[1].Role != provider.System || !strings.Contains(conv[1].Content, "- Earth has one moon [0.95]") {
		t.Fatalf("after first injection: %+v", conv)
	}
	conv = append(conv, provider.Message{Role: provider.Assistant, Content: "one"})
	facts[0].Object = "exactly one moon"
	conv = withKnowledge(conv, formatFacts(facts))
	n := 0
	for _, m := range conv {
		if strings.HasPrefix(m.Content, knowledgeMarker) {
			n++
			if !strings.Contains(m.Content, "exactly one moon") {
				t.Errorf("the injection was not replaced: %q", m.Content)
			}
		}
	}
	if n != 1 || len(conv) != 4 || conv[0].Content != "You are helpful." {
		t.Fatalf("after second injection: %+v", conv)
	}
	conv = withKnowledge(conv, "")
	if len(conv) != 3 || strings.HasPrefix(conv[1].Content, knowledgeMarker) {
		t.Fatalf("an empty recall left the old facts: %+v", conv)
	}
}

func TestKnowledgeQueryUsesLatestObservation(t *testing.T) {
	conv := []provider.Message{
		{Role: provider.User, Content: "task"},
		{Role: provider.Assistant, ToolCalls: []provider.ToolCall{{ID: "1", Name: "search"}}},
		{Role: provider.ToolRole, Content: "Paris is the capital"},
	}
	if q := knowledgeQuery("task", conv); q != "task\nParis is the capital" {
		t.Errorf("query = %q", q)
	}
	if q := knowledgeQuery("task", conv[:1]); q != "task" {
		t.Errorf("query without observations = %q", q)
	}
}
