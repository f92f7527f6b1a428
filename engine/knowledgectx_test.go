package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/builtins"
	"github.com/symbi-dev/symbi/journal"
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

const knowledgeFixture = `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
knowledge "notes" {
  path = "kb/knowledge.db"
}
agent "a" {
  model = model.offline
  loop {
    mode = "%s"
  }
  knowledge {
    store               = knowledge.notes
    max_context_items   = 3
    relevance_threshold = 0.3
    auto_persist        = true
  }
}
best_of_n "answer" {
  agent      = agent.a
  candidates = 2
  vary {
    temperature = candidate.index
  }
  scorer {
    expr = 1
  }
}
`

func knowledgeEngine(t *testing.T, mode, script string) (*Engine, *recorder, builtins.KnowledgeStore) {
	t.Helper()
	p, dir := fixture{"main.hcl": fmt.Sprintf(knowledgeFixture, mode), "scripts/model.json": script}.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	store, err := e.knowledgeStore("knowledge.notes")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(context.Background(), knowledge.Fact{Subject: "Earth", Predicate: "has", Object: "one moon", Confidence: 0.95}); err != nil {
		t.Fatal(err)
	}
	return e, rec, store
}

func TestKnowledgeInjectedAndPersisted(t *testing.T) {
	e, _, store := knowledgeEngine(t, "simple", `{"turns": [{"when": "moon", "content": "Earth has one moon."}]}`)
	res := mustRun(t, e, "a", "Earth moon count?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	var injected journal.KnowledgeInjectedData
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type == journal.KnowledgeInjected {
			if err := ev.Decode(&injected); err != nil {
				t.Fatal(err)
			}
		}
	}
	if injected.Store != "knowledge.notes" || len(injected.Facts) != 1 || injected.Facts[0] != "Earth has one moon" {
		t.Errorf("knowledge_injected %+v", injected)
	}
	facts, err := store.Recall(context.Background(), "Earth moon count answered", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var persisted bool
	for _, f := range facts {
		persisted = persisted || (f.Predicate == "was answered with" && f.Object == "Earth has one moon." && f.Confidence == autoPersistConfidence)
	}
	if !persisted {
		t.Errorf("the answer was not persisted: %+v", facts)
	}
}

// TestKnowledgeInjectedForANaturalQuestion: "Tell me about the Earth" is
// about the Earth; the words it is asked in must not keep the Earth fact
// below the threshold (issue 12).
func TestKnowledgeInjectedForANaturalQuestion(t *testing.T) {
	e, _, _ := knowledgeEngine(t, "simple", `{"turns": [{"content": "Earth has one moon."}]}`)
	res := mustRun(t, e, "a", "Tell me about the Earth", RunOptions{})
	var injected []journal.KnowledgeInjectedData
	for _, ev := range journalOf(t, e, res.RunID) {
		if ev.Type == journal.KnowledgeInjected {
			var d journal.KnowledgeInjectedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			injected = append(injected, d)
		}
	}
	if len(injected) != 1 || len(injected[0].Facts) != 1 || injected[0].Facts[0] != "Earth has one moon" {
		t.Errorf("knowledge_injected %+v, want the Earth fact once", injected)
	}
}

func TestKnowledgeBestOfNPersistsOnlyTheSelectedAnswer(t *testing.T) {
	e, _, store := knowledgeEngine(t, "simple", `{"turns": [
  {"when_temperature": 0, "content": "One moon."},
  {"when_temperature": 1, "content": "Exactly one moon."}
]}`)
	res, err := e.BestOfN(context.Background(), "answer", "How many moons has Earth?", RunOptions{})
	if err != nil || res.Termination.Reason != Completed {
		t.Fatalf("%v %s", err, res.Termination)
	}
	all, err := store.Recall(context.Background(), "moons Earth answered moon", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, f := range all {
		if f.Predicate == "was answered with" {
			answers = append(answers, f.Object)
		}
	}
	if len(answers) != 1 || answers[0] != res.Answer {
		t.Errorf("persisted answers %q, want only the selected %q", answers, res.Answer)
	}
}

func TestKnowledgePlanStepsDoNotPersist(t *testing.T) {
	e, _, store := knowledgeEngine(t, "plan_execute", `{"turns": [
  {"when": "Break the task", "content": "{\"steps\": [{\"id\": \"s1\", \"task\": \"look it up\"}]}"},
  {"when": "Your step \\(s1\\)", "content": "step result"},
  {"when": "carried out in steps", "content": "final answer"}
]}`)
	res := mustRun(t, e, "a", "How many moons has Earth?", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "final answer" {
		t.Fatalf("termination %s answer %q", res.Termination, res.Answer)
	}
	all, err := store.Recall(context.Background(), "moons Earth answered step look", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if f.Predicate == "was answered with" && f.Object != "final answer" {
			t.Errorf("a step persisted %q", f.Object)
		}
	}
}
