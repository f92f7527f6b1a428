package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
)

func prehydrateFixture(policy string, maxTokens int) fixture {
	return fixture{
		"main.hcl": `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
tool "read_file" {
  description = "Read a file"
  builtin     = "read_file"
}
policy "rules" {
  rules {
    ` + policy + `
  }
}
agent "reader" {
  model    = model.offline
  system   = "Summarise."
  tools    = [tool.read_file]
  policies = [policy.rules]
  pre_hydrate {
    resolvers          = { file = tool.read_file }
    max_context_tokens = ` + strconv.Itoa(maxTokens) + `
  }
}
`,
		"notes.md":           "The launch is on Friday.",
		"docs/secret.md":     "hunter2",
		"scripts/model.json": `{"turns": [{"content": "ok"}]}`,
	}
}

// prehydrateRun builds a run the way Run does and pre-hydrates it.
func prehydrateRun(t *testing.T, f fixture, input string) (*run, *recorder, error) {
	t.Helper()
	p, dir := f.compile(t)
	e, rec := newEngine(t, p, dir, nil)
	r, err := e.newRun(context.Background(), "reader", input, RunOptions{NoJournal: true})
	if err != nil {
		t.Fatal(err)
	}
	r.conv = r.initialConversation()
	return r, rec, r.prehydrate(context.Background())
}

func prehydratedData(t *testing.T, rec *recorder) journal.PrehydratedData {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, ev := range rec.events {
		if ev.Type == journal.Prehydrated {
			var d journal.PrehydratedData
			if err := (journal.Event{Type: ev.Type, Data: ev.Data}).Decode(&d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no prehydrated event")
	return journal.PrehydratedData{}
}

func TestPrehydrateResolvesThroughTheGate(t *testing.T) {
	r, rec, err := prehydrateRun(t, prehydrateFixture(`allow = ["read_file"]
    deny  = ["read_file:path=docs/*"]`, 4000), "Summarise notes.md and docs/secret.md please.")
	if err != nil {
		t.Fatal(err)
	}
	// system, the references, the task
	if len(r.conv) != 3 || r.conv[1].Role != provider.User || r.conv[2].Content != "Summarise notes.md and docs/secret.md please." {
		t.Fatalf("conversation %+v", r.conv)
	}
	ctxMsg := r.conv[1].Content
	if !strings.Contains(ctxMsg, `<reference kind="file" value="notes.md">`) || !strings.Contains(ctxMsg, "The launch is on Friday.") {
		t.Errorf("context message %q", ctxMsg)
	}
	if strings.Contains(ctxMsg, "hunter2") {
		t.Errorf("a denied reference reached the model: %q", ctxMsg)
	}
	d := prehydratedData(t, rec)
	if len(d.References) != 2 || d.References[0].Tokens == 0 || !strings.Contains(d.References[1].Error, "[policy denied]") {
		t.Errorf("prehydrated %+v", d)
	}
	types := rec.types()
	if !containsString(types, journal.PolicyEvaluated) || !containsString(types, journal.ToolResult) {
		t.Errorf("resolver calls were not gated and journalled like any call: %v", types)
	}
	if u := usageOf(r.acct); u.ToolCalls != 1 {
		t.Errorf("tool calls counted %d, want 1 (the denied one never ran)", u.ToolCalls)
	}
}

func TestPrehydrateRespectsMaxContextTokens(t *testing.T) {
	f := prehydrateFixture(`allow = ["read_file"]`, 20)
	f["notes.md"] = strings.Repeat("long text ", 200)
	r, rec, err := prehydrateRun(t, f, "Summarise notes.md")
	if err != nil {
		t.Fatal(err)
	}
	d := prehydratedData(t, rec)
	if d.Tokens > 20 || d.Tokens == 0 {
		t.Errorf("%d tokens injected, want at most 20", d.Tokens)
	}
	if len(r.conv) != 3 || !strings.Contains(r.conv[1].Content, "cut to fit max_context_tokens") {
		t.Errorf("conversation %+v", r.conv)
	}
}

func TestPrehydrateNothingToResolve(t *testing.T) {
	r, rec, err := prehydrateRun(t, prehydrateFixture(`allow = ["read_file"]`, 100), "What is 6 * 7?")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.conv) != 2 {
		t.Errorf("conversation changed: %+v", r.conv)
	}
	if containsString(rec.types(), journal.Prehydrated) {
		t.Errorf("journalled a pre-hydration with nothing in it")
	}
}

func TestPrehydrateLeavesOutWhatCannotFit(t *testing.T) {
	f := prehydrateFixture(`allow = ["read_file"]`, 5)
	f["notes.md"] = strings.Repeat("long text ", 200)
	r, rec, err := prehydrateRun(t, f, "Summarise notes.md")
	if err != nil {
		t.Fatal(err)
	}
	if d := prehydratedData(t, rec); d.Tokens != 0 || !strings.Contains(d.References[0].Error, "max_context_tokens") {
		t.Errorf("prehydrated %+v", d)
	}
	if len(r.conv) != 2 {
		t.Errorf("an empty reference was injected: %+v", r.conv)
	}
}
