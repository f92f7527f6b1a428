package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/journal"
)

func stepEvents(t *testing.T, evs []journal.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		switch ev.Type {
		case journal.StepStarted:
			var d journal.StepStartedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, "start "+d.StepID)
		case journal.StepFinished:
			var d journal.StepFinishedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d.Status+" "+d.StepID)
		case journal.PlanCreated:
			var d journal.PlanCreatedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.Replan {
				out = append(out, "replan")
			} else {
				out = append(out, "plan")
			}
		}
	}
	return out
}

func TestPlanExecuteExample(t *testing.T) {
	cfg, diags := interp.Compile("../examples/plan_execute.hcl", interp.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e, _ := newEngine(t, cfg.Plan, cfg.BaseDir, nil)
	res := mustRun(t, e, "", "Is 6 * 7 equal to 100 - 58?", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "Yes: 6 * 7 and 100 - 58 are both 42." {
		t.Fatalf("termination %s answer %q", res.Termination, res.Answer)
	}
	got := stepEvents(t, journalOf(t, e, res.RunID))
	// s1 and s2 are independent and max_parallel_steps is 2: both start
	// before either finishes; s3 starts only after both.
	if len(got) != 7 || got[0] != "plan" || got[1] != "start s1" || got[2] != "start s2" || got[5] != "start s3" || got[6] != "done s3" {
		t.Fatalf("steps %v", got)
	}
	if !slices.Contains(got[3:5], "done s1") || !slices.Contains(got[3:5], "done s2") {
		t.Fatalf("steps %v", got)
	}
	if res.Usage.ToolCalls != 2 {
		t.Errorf("usage %+v, want the two calculator calls of s1 and s2", res.Usage)
	}
}

const planFixture = `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
agent "planner" {
  model = model.offline
  loop {
    mode = "plan_execute"
  }
  plan {
    max_steps          = 3
    max_parallel_steps = 1
    allow_replanning   = true
  }
}
`

func TestPlanExecuteFixesAnInvalidPlan(t *testing.T) {
	p, dir := fixture{
		"main.hcl": planFixture,
		"scripts/model.json": `{"turns": [
  {"when": "Break the task", "content": "{\"steps\": [{\"id\": \"a\", \"task\": \"A\", \"depends_on\": [\"b\"]}, {\"id\": \"b\", \"task\": \"B\", \"depends_on\": [\"a\"]}]}"},
  {"when": "cannot run: plan: dependency_cycle", "content": "{\"steps\": [{\"id\": \"a\", \"task\": \"A\"}]}"},
  {"when": "Your step \\(a\\)", "content": "done A"},
  {"when": "carried out in steps", "content": "final"}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "final" {
		t.Fatalf("termination %s answer %q", res.Termination, res.Answer)
	}
}

func TestPlanExecuteInvalidPlanTwiceFails(t *testing.T) {
	p, dir := fixture{
		"main.hcl": planFixture,
		"scripts/model.json": `{"turns": [
  {"content": "{\"steps\": [{\"id\": \"a\", \"task\": \"A\", \"depends_on\": [\"zz\"]}]}"}
], "on_exhausted": "repeat_last"}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	var pe *PlanError
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &pe) || pe.Kind != PlanErrorUnknownDependency {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
}

func TestPlanExecuteReplansAfterAFailedStep(t *testing.T) {
	p, dir := fixture{
		"main.hcl": planFixture,
		"scripts/model.json": `{"turns": [
  {"when": "Break the task", "content": "{\"steps\": [{\"id\": \"a\", \"task\": \"fetch\"}, {\"id\": \"b\", \"task\": \"use\", \"depends_on\": [\"a\"]}]}"},
  {"when": "Your step \\(a\\)", "error": {"kind": "model_unavailable", "message": "down"}},
  {"when": "Step a failed", "content": "{\"steps\": [{\"id\": \"a2\", \"task\": \"fetch elsewhere\"}]}"},
  {"when": "Your step \\(a2\\)", "content": "fetched"},
  {"when": "carried out in steps", "content": "final"}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	if res.Termination.Reason != Completed || res.Answer != "final" {
		t.Fatalf("termination %s answer %q", res.Termination, res.Answer)
	}
	got := stepEvents(t, journalOf(t, e, res.RunID))
	want := []string{"plan", "start a", "failed a", "replan", "start a2", "done a2"}
	if !slices.Equal(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
}

func TestPlanExecuteStepFailureWithoutReplanning(t *testing.T) {
	p, dir := fixture{
		"main.hcl": `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
agent "planner" {
  model = model.offline
  loop {
    mode = "plan_execute"
  }
  plan {
    allow_replanning = false
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"when": "Break the task", "content": "{\"steps\": [{\"id\": \"a\", \"task\": \"fetch\"}]}"},
  {"when": "Your step \\(a\\)", "error": {"kind": "model_unavailable", "message": "down"}}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	var sf *StepFailedError
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &sf) || sf.Step != "a" {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
}

func TestPlanExecuteStuckPlanAborts(t *testing.T) {
	// Every plan's only step fails the same way; the progress block allows
	// one similar reattempt, so the third failure ends the run.
	p, dir := fixture{
		"main.hcl": `
model "offline" {
  provider = "scripted"
  script   = "scripts/model.json"
}
agent "planner" {
  model = model.offline
  loop {
    mode = "plan_execute"
  }
  plan {
    allow_replanning = true
  }
  progress {
    max_reattempts_per_step = 1
    similarity_threshold    = 0.8
    on_limit                = "abort"
  }
}
`,
		"scripts/model.json": `{"turns": [
  {"when": "Break the task", "content": "{\"steps\": [{\"id\": \"a\", \"task\": \"fetch\"}]}"},
  {"when": "Your step \\(a\\)", "error": {"kind": "model_unavailable", "message": "down 1"}},
  {"when": "Step a failed", "content": "{\"steps\": [{\"id\": \"b\", \"task\": \"fetch again\"}]}"},
  {"when": "Your step \\(b\\)", "error": {"kind": "model_unavailable", "message": "down 2"}},
  {"when": "Step b failed", "content": "{\"steps\": [{\"id\": \"c\", \"task\": \"fetch once more\"}]}"},
  {"when": "Your step \\(c\\)", "error": {"kind": "model_unavailable", "message": "down 3"}}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	var st *StuckError
	if res.Termination.Reason != Failed || !errors.As(res.Termination.Err, &st) || st.Step != "c" {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
}

// A step whose model ends the run with the terminate tool (allow_terminate)
// ends the whole run as agent_terminated; the plan is not repaired around it.
func TestPlanExecuteStepThatTerminatesEndsTheRun(t *testing.T) {
	p, dir := fixture{
		"main.hcl": strings.Replace(planFixture, `mode = "plan_execute"`, "mode            = \"plan_execute\"\n    allow_terminate = true", 1),
		"scripts/model.json": `{"turns": [
  {"when": "Break the task", "content": "{\"steps\": [{\"id\": \"a\", \"task\": \"A\"}, {\"id\": \"b\", \"task\": \"B\", \"depends_on\": [\"a\"]}]}"},
  {"when": "Your step \\(a\\)", "tool_calls": [{"id": "t1", "name": "terminate", "arguments": {"reason": "the task cannot be done safely"}}]}
]}`,
	}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	res := mustRun(t, e, "", "task", RunOptions{})
	if res.Termination.Reason != AgentTerminated || !strings.Contains(res.Termination.Detail, "cannot be done safely") {
		t.Fatalf("termination %s (%v)", res.Termination, res.Termination.Err)
	}
	got := stepEvents(t, journalOf(t, e, res.RunID))
	if slices.Contains(got, "replan") || slices.Contains(got, "start b") {
		t.Fatalf("steps %v: the plan went on after the run was ended", got)
	}
}
