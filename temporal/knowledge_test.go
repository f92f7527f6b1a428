package temporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/symbi-dev/symbi/knowledge"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// knowledgeFixture is an agent that recalls from a store shipped with the
// configuration (facts.db, holding one fact) before each step.
func knowledgeFixture(t *testing.T) string {
	t.Helper()
	dir := files(t, map[string]string{
		"agent.hcl": `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
knowledge "facts" {
  path = "facts.db"
}
agent "a" {
  model = model.m
  knowledge {
    store               = knowledge.facts
    max_context_items   = 3
    relevance_threshold = 0.1
  }
}
`,
		"script.json": `{"turns": [{"content": "One."}]}`,
	})
	s, err := knowledge.Open(filepath.Join(dir, "facts.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), knowledge.Fact{Subject: "Earth", Predicate: "has", Object: "one moon", Confidence: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	return dir
}

// A knowledge store on Temporal is read on the workers: the recall before
// each step is a knowledge activity against the worker's copy, whose
// answer is injected as locally, and the store is listed with the run's
// scripts, so a worker whose copy differs refuses the run.
func TestKnowledgeMatchesLocal(t *testing.T) {
	dir := knowledgeFixture(t)
	p, base := compile(t, dir)
	want, wantEvs := local(t, p, base, "", "How many moons has Earth?")
	if want.Answer != "One." {
		t.Fatalf("local answer %q", want.Answer)
	}
	te, acts := env(t, base)
	in := start(t, acts, p, "", "How many moons has Earth?")
	if len(in.Scripts) != 1 || in.Scripts[0].Path != "facts.db" {
		t.Fatalf("the start lists %+v", in.Scripts)
	}
	te.ExecuteWorkflow(contract.Workflow, in)
	got, gotEvs := outcome(t, te)
	same(t, want, wantEvs, got, gotEvs)
	injected := false
	for _, ev := range gotEvs {
		injected = injected || ev.Type == "knowledge_injected" && strings.Contains(string(ev.Data), "Earth has one moon")
	}
	if !injected {
		t.Errorf("the fact was not injected: %v", timeline(t, gotEvs))
	}

	// Another copy of the store on the worker: refused before anything runs.
	acts.Close() // its engine holds the store open
	s, err := knowledge.Open(filepath.Join(base, "facts.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), knowledge.Fact{Subject: "Mars", Predicate: "has", Object: "two moons", Confidence: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	te2, _ := env(t, base)
	te2.ExecuteWorkflow(contract.Workflow, in)
	var ae *temporal.ApplicationError
	if err := te2.GetWorkflowError(); !errors.As(err, &ae) || ae.Type() != ErrFileMismatch || !strings.Contains(ae.Message(), "facts.db") {
		t.Fatalf("a worker with another store: %v", err)
	}
}

// A worker opens the store read-only: writing to it fails with
// knowledge.ErrReadOnly, and the file stays as shipped.
func TestKnowledgeReadOnlyOnWorker(t *testing.T) {
	dir := knowledgeFixture(t)
	p, base := compile(t, dir)
	before, err := os.ReadFile(filepath.Join(base, "facts.db"))
	if err != nil {
		t.Fatal(err)
	}
	acts := &Activities{BaseDir: base}
	defer acts.Close()
	in, err := contract.NewStart(p, base, "agent.a", "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := acts.Prepare(in); err != nil {
		t.Fatal(err)
	}
	e, release, ok := acts.engines().acquire(engineKey(in.PlanDigest, in.ScriptsDigest))
	if !ok {
		t.Fatal("the prepared engine is not kept")
	}
	defer release()
	got, err := e.RecallKnowledge(context.Background(), "knowledge.facts", "Earth moon", 3, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("recall on the worker: %v %v", got, err)
	}
	ks := knowledgeOn(nil, in.PlanDigest, in.ScriptsDigest)("knowledge.facts")
	if err := ks.Put(context.Background(), knowledge.Fact{Subject: "a", Predicate: "b", Object: "c", Confidence: 1}); !errors.Is(err, knowledge.ErrReadOnly) {
		t.Fatalf("a run's write: %v", err)
	}
	after, err := os.ReadFile(filepath.Join(base, "facts.db"))
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("the worker changed the store's file")
	}
}
