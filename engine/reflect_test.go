package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
)

// reflections decodes the reflection_evaluated events of a run's journal.
func reflections(t *testing.T, evs []journal.Event) []journal.ReflectionEvaluatedData {
	t.Helper()
	var out []journal.ReflectionEvaluatedData
	for _, ev := range evs {
		if ev.Type == journal.ReflectionEvaluated {
			var d journal.ReflectionEvaluatedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

func verdicts(rs []journal.ReflectionEvaluatedData) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Verdict
	}
	return out
}

func TestReflectExampleEvaluatorRevisesThenPasses(t *testing.T) {
	cfg, diags := interp.Compile("../examples/reflect.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e, rec := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res := mustRun(t, e, "writer", "In one sentence: why is the sky blue?", RunOptions{})
	if res.Termination.Reason != Completed {
		t.Fatalf("termination %s", res.Termination)
	}
	if want := "Air molecules scatter short blue wavelengths of sunlight far more than red ones, so blue light reaches us from every direction of the sky."; res.Answer != want {
		t.Fatalf("answer %q", res.Answer)
	}
	if got := rec.deltas(); got != res.Answer {
		t.Errorf("streamed %q: drafts must not reach the terminal, only the answer that passed", got)
	}
	rs := reflections(t, journalOf(t, e, res.RunID))
	if got := verdicts(rs); !slices.Equal(got, []string{VerdictRevise, VerdictPass}) {
		t.Fatalf("verdicts %v", got)
	}
	if rs[0].Evaluator != "agent.critic" || rs[0].Score != 0.6 || rs[0].Feedback == "" {
		t.Errorf("first evaluation %+v", rs[0])
	}
}

func TestReflectExampleRubricRetriesThenPasses(t *testing.T) {
	cfg, diags := interp.Compile("../examples/reflect_rubric.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e, _ := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res := mustRun(t, e, "", "Name the largest planet in the solar system.", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "Jupiter." {
		t.Fatalf("termination %s answer %q", res.Termination, res.Answer)
	}
	rs := reflections(t, journalOf(t, e, res.RunID))
	if got := verdicts(rs); !slices.Equal(got, []string{VerdictRetry, VerdictPass}) {
		t.Fatalf("verdicts %v", got)
	}
	if rs[0].Evaluator != "rubric" || rs[0].Scores["accuracy"] != 0.2 || rs[0].Score < 0.4399 || rs[0].Score > 0.4401 {
		t.Errorf("first evaluation %+v", rs[0])
	}
}

const reflectFixture = `
model "writer" {
  provider = "scripted"
  script   = "scripts/writer.json"
}
model "critic" {
  provider = "scripted"
  script   = "scripts/critic.json"
}
agent "critic" {
  model = model.critic
  loop {
    mode = "simple"
  }
}
`

func TestReflectBlock(t *testing.T) {
	p, dir := fixture{
		"main.hcl": reflectFixture + `
agent "writer" {
  model = model.writer
  loop {
    mode = "reflect_and_retry"
  }
  reflect {
    evaluator = agent.critic
  }
}
`,
		"scripts/writer.json": `{"turns": [{"content": "Buy now!"}]}`,
		"scripts/critic.json": `{"turns": [{"content": "{\"score\": 0.1, \"feedback\": \"spam\"}"}]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "writer", "Describe the product.", RunOptions{})
	var re *ReflectionError
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &re) || re.Verdict != VerdictBlock || re.Feedback != "spam" {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
	if res.Answer != "" {
		t.Errorf("a blocked answer was returned: %q", res.Answer)
	}
}

func TestReflectAttemptsRunOut(t *testing.T) {
	p, dir := fixture{
		"main.hcl": reflectFixture + `
agent "writer" {
  model = model.writer
  loop {
    mode = "reflect_and_retry"
  }
  reflect {
    evaluator    = agent.critic
    max_attempts = 2
  }
}
`,
		"scripts/writer.json": `{"turns": [{"content": "draft"}], "on_exhausted": "repeat_last"}`,
		"scripts/critic.json": `{"turns": [{"content": "0.6"}], "on_exhausted": "repeat_last"}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "writer", "Write.", RunOptions{})
	var re *ReflectionError
	if !errors.As(res.Termination.Err, &re) || re.Verdict != VerdictRevise || re.Attempts != 2 {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
	if n := len(reflections(t, journalOf(t, e, res.RunID))); n != 2 {
		t.Errorf("%d evaluations, want 2", n)
	}
}

func TestReflectBudgetLimitsAttempts(t *testing.T) {
	p, dir := fixture{
		"main.hcl": reflectFixture + `
budget "tight" {
  max_reflection_attempts = 1
}
agent "writer" {
  model  = model.writer
  budget = budget.tight
  loop {
    mode = "reflect_and_retry"
  }
  reflect {
    evaluator    = agent.critic
    max_attempts = 5
  }
}
`,
		"scripts/writer.json": `{"turns": [{"content": "draft"}], "on_exhausted": "repeat_last"}`,
		"scripts/critic.json": `{"turns": [{"content": "{\"score\": 0.4}"}], "on_exhausted": "repeat_last"}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "writer", "Write.", RunOptions{})
	if res.Termination.Reason != BudgetExceeded || res.Termination.Limit != budget.MaxReflectionAttempts {
		t.Fatalf("termination %s", res.Termination)
	}
}

func TestReflectUnreadableEvaluation(t *testing.T) {
	p, dir := fixture{
		"main.hcl": reflectFixture + `
agent "writer" {
  model = model.writer
  loop {
    mode = "reflect_and_retry"
  }
  reflect {
    evaluator = agent.critic
  }
}
`,
		"scripts/writer.json": `{"turns": [{"content": "draft"}]}`,
		"scripts/critic.json": `{"turns": [{"content": "Looks fine to me!"}]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "writer", "Write.", RunOptions{})
	var se *ScoreError
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &se) {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
}
