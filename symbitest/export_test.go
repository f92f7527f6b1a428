package symbitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/cassette"
	"github.com/symbi-dev/symbi/provider/scripted"
)

// TestExport runs examples/delegation.hcl (a lead that delegates to a
// researcher whose answer a critic scores: three models, three journals),
// exports the run, and replays the cassette: every model's turns are in it,
// in the order they happened, and -update gives each exchange its request
// without calling a model. The script of one model plays its turns.
func TestExport(t *testing.T) {
	config, err := filepath.Abs("../examples/delegation.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := write(t, dir, "delegation.symbitest.hcl", `config = "`+config+`"
run "delegates" {
  agent = agent.lead
  input = "What is 6 * 7?"
  assert {
    condition     = run.answer == "The researcher says 6 × 7 is 42."
    error_message = "The lead reports the researcher's answer."
  }
}
`)
	stateDir := filepath.Join(dir, "state")
	s := load(t, []string{path}, LoadOptions{})
	_, got := runAll(t, s, RunOptions{StateDir: stateDir})
	rr := got["delegates"]
	if rr.Status != Pass {
		t.Fatalf("the run to export: %s\n%s", rr.Status, text(s, rr))
	}
	id := rr.RunIDs()[0]

	c, err := ExportCassette(stateDir, id)
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	for _, x := range c.Exchanges {
		models = append(models, x.Model)
		if x.Request != nil {
			t.Errorf("an exported exchange has a request: %+v", x.Request)
		}
	}
	// The lead delegates; the researcher calls the calculator, answers,
	// is scored; the lead answers.
	if strings.Join(models, " ") != "model.lead model.worker model.worker model.judge model.lead" {
		t.Errorf("exported exchanges of %v", models)
	}
	cas := filepath.Join(dir, "exported.json")
	if err := c.Save(cas); err != nil {
		t.Fatal(err)
	}

	// Replayed with -update: it passes, calls no model (the scripted ones
	// are not called either: the cassette stands before them) and pins
	// every request.
	replay := write(t, dir, "replay.symbitest.hcl", strings.Replace(
		strings.Replace(readFile(t, path), `input = "What is 6 * 7?"`, `input = "What is 6 * 7?"
  cassette = "exported.json"`, 1), `run "delegates"`, `run "replayed"`, 1))
	s = load(t, []string{replay}, LoadOptions{Update: true})
	_, got = runAll(t, s, RunOptions{StateDir: stateDir, Update: true})
	if rr := got["replayed"]; rr.Status != Pass || !rr.Updated {
		t.Fatalf("replaying the export: %s, updated %t\n%s", rr.Status, rr.Updated, text(s, rr))
	}
	pinned, err := cassette.Load(cas)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range pinned.Exchanges {
		if x.Request == nil || x.RequestDigest == "" {
			t.Errorf("exchange %d was not given its request", i)
		}
	}
	if len(pinned.Exchanges) != 5 {
		t.Errorf("%d exchanges after pinning", len(pinned.Exchanges))
	}

	// A script of one model.
	if _, err := ExportScript(stateDir, id, ""); err == nil || !strings.Contains(err.Error(), "called 3 models (model.judge, model.lead, model.worker)") {
		t.Errorf("a script of several models: %v", err)
	}
	b, err := ExportScript(stateDir, id, "model.worker")
	if err != nil {
		t.Fatal(err)
	}
	script, err := scripted.Parse(b)
	if err != nil {
		t.Fatalf("the exported script does not parse: %v\n%s", err, b)
	}
	m := scripted.New(script)
	first, err := m.Stream(context.Background(), provider.Request{}, nil)
	if err != nil || len(first.ToolCalls) != 1 || first.ToolCalls[0].Name != "calculator" {
		t.Errorf("the script's first turn: %+v, %v", first, err)
	}
	second, err := m.Stream(context.Background(), provider.Request{}, nil)
	if err != nil || second.Content != "6 × 7 is 42 (from the calculator)." {
		t.Errorf("the script's second turn: %+v, %v", second, err)
	}

	if _, err := ExportCassette(stateDir, "20261202T000000Z-00000000"); err == nil {
		t.Error("a run that does not exist was exported")
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
