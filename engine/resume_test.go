package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/journal"
)

// chainHCL is a react agent whose scripted model needs four iterations,
// each turn chosen by the previous tool result (so a resumed run, whose
// fresh model has played nothing, picks up at the right turn), each after
// a latency that leaves time to kill the process in between.
const chainHCL = `
model "m" {
  provider = "scripted"
  script   = "script.json"
}
tool "calculator" {
  description = "arithmetic"
  builtin     = "calculator"
}
policy "rules" {
  rules {
    allow = ["calculator"]
  }
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
  loop {
    mode = "react"
  }
}
`

const chainScript = `{"turns":[
 {"when":"^start$","latency":"150ms","tool_calls":[{"id":"c1","name":"calculator","arguments":{"expression":"1+1"}}]},
 {"when":"^2$","latency":"150ms","tool_calls":[{"id":"c2","name":"calculator","arguments":{"expression":"2+2"}}]},
 {"when":"^4$","latency":"150ms","tool_calls":[{"id":"c3","name":"calculator","arguments":{"expression":"4+4"}}]},
 {"when":"^8$","latency":"150ms","chunks":["the answer ","is 8"]}]}`

// TestSymbiProcess builds the symbi binary and drives real processes:
// one killed with SIGKILL and resumed, one interrupted with SIGINT.
func TestSymbiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the symbi binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	bin := filepath.Join(t.TempDir(), "symbi")
	build := exec.Command(gobin, "build", "-o", bin, "./cmd/symbi")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("SIGKILL then resume", func(t *testing.T) { resumeAfterSIGKILL(t, bin) })
	t.Run("SIGINT cancels and journals it", func(t *testing.T) { interruptWithSIGINT(t, bin) })
}

// resumeAfterSIGKILL kills a symbi process with SIGKILL after its second
// iteration is journalled, resumes the run with `symbi resume`, and
// expects the answer of an uninterrupted run, in the same journal.
func resumeAfterSIGKILL(t *testing.T, bin string) {

	files := fixture{"main.hcl": chainHCL, "script.json": chainScript}
	p, dir := files.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	want := mustRun(t, e, "a", "start", RunOptions{})
	if want.Termination.Reason != Completed || want.Answer != "the answer is 8" {
		t.Fatalf("uninterrupted run: %s %q", want.Termination, want.Answer)
	}

	state := filepath.Join(dir, "killed-state")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--state-dir", state, filepath.Join(dir, "main.hcl"), "start")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	runID := waitForIteration(t, ctx, state, 2)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before, err := journal.ReadFile(journal.Path(state, runID))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range before {
		if ev.Type == journal.Terminated {
			t.Fatalf("the run finished before it was killed; journal %v", eventTypes(before))
		}
	}

	var stdout, stderr bytes.Buffer
	resume := exec.CommandContext(ctx, bin, "resume", "--state-dir", state, runID)
	resume.Stdout, resume.Stderr = &stdout, &stderr
	if err := resume.Run(); err != nil {
		t.Fatalf("symbi resume: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != want.Answer {
		t.Errorf("resumed answer %q, uninterrupted %q", got, want.Answer)
	}
	after, err := journal.ReadFile(journal.Path(state, runID))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) <= len(before) || after[len(before)].Seq != before[len(before)-1].Seq+1 {
		t.Errorf("the resumed run did not continue the journal's numbering")
	}
	var starts int
	for _, ev := range after {
		if ev.Type == journal.Started {
			starts++
		}
	}
	s := journal.Summarize(after)
	if starts != 2 || s.Status != "completed" || s.Iterations != want.Iterations {
		t.Errorf("journal after resume: %d starts, status %s, %d iterations (want 2, completed, %d)", starts, s.Status, s.Iterations, want.Iterations)
	}
	// Everything the model said before the kill is in the resumed
	// conversation, so the model was asked only for what was left.
	if s.Usage.ModelCalls > int64(want.Iterations)+1 {
		t.Errorf("%d model calls over both processes; an uninterrupted run makes %d", s.Usage.ModelCalls, want.Iterations)
	}
}

// interruptWithSIGINT interrupts a run waiting for a slow model: the run
// ends as cancelled, journalled, and the process exits 130.
func interruptWithSIGINT(t *testing.T, bin string) {
	slow := strings.Replace(chainScript, `"when":"^start$","latency":"150ms"`, `"when":"^start$","latency":"1h"`, 1)
	_, dir := fixture{"main.hcl": chainHCL, "script.json": slow}.compile(t)
	state := filepath.Join(dir, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "run", "--state-dir", state, filepath.Join(dir, "main.hcl"), "start")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	runID := waitForEvent(t, ctx, state, journal.Started, 0)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	evs, err := journal.ReadFile(journal.Path(state, runID))
	if err != nil {
		t.Fatal(err)
	}
	var d journal.TerminatedData
	if last := evs[len(evs)-1]; last.Type != journal.Terminated || last.Decode(&d) != nil || d.Reason != "cancelled" {
		t.Errorf("journal ends with %s %s", last.Type, last.Data)
	}
}

// waitForIteration polls the state directory until a run has journalled
// the observations of iteration n, and returns its id.
func waitForIteration(t *testing.T, ctx context.Context, state string, n int) string {
	t.Helper()
	return waitForEvent(t, ctx, state, journal.ObservationsCollected, n)
}

// waitForEvent polls the state directory until its one run has journalled
// an event of type typ in iteration n, and returns the run's id.
func waitForEvent(t *testing.T, ctx context.Context, state, typ string, n int) string {
	t.Helper()
	for {
		runs, _ := journal.ListRuns(state)
		if len(runs) == 1 {
			evs, _ := journal.ReadFile(journal.Path(state, runs[0].ID))
			for _, ev := range evs {
				if ev.Type == typ && ev.Iteration == n {
					return runs[0].ID
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no run journalled %s in iteration %d", typ, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestResumeInProcess cuts a finished run's journal back to its second
// iteration, as a crash would leave it, and resumes it in this process.
func TestResumeInProcess(t *testing.T) {
	p, dir := fixture{"main.hcl": chainHCL, "script.json": strings.ReplaceAll(chainScript, `"latency":"150ms",`, "")}.compile(t)
	e, _ := newEngine(t, p, dir, nil)
	want := mustRun(t, e, "a", "start", RunOptions{})
	// The journal closes in the background and holds the run until then.
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	path := journal.Path(e.StateDir(), want.RunID)
	evs := journalOf(t, e, want.RunID)
	var cut int
	for i, ev := range evs {
		if ev.Type == journal.ReasoningComplete && ev.Iteration == 3 {
			cut = i + 2 // keep iteration 3's reasoning and gate, lose its observations
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	torn := strings.Join(lines[:cut], "") + lines[cut][:len(lines[cut])/2] // and a torn line
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	// A fresh engine, as after a restart: its scripted model has played nothing.
	e2, _ := newEngine(t, p, dir, func(o *Options) { o.StateDir = e.StateDir() })
	got, err := e2.Resume(context.Background(), want.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Termination.Reason != Completed || got.Answer != want.Answer || got.Iterations != want.Iterations {
		t.Errorf("resumed: %s %q after %d iterations; want %q after %d", got.Termination, got.Answer, got.Iterations, want.Answer, want.Iterations)
	}
	if got.Usage.ModelCalls != want.Usage.ModelCalls+1 {
		t.Errorf("model calls %d, want %d (the cut iteration's call is paid twice)", got.Usage.ModelCalls, want.Usage.ModelCalls+1)
	}
	if _, err := e2.Resume(context.Background(), want.RunID); err == nil {
		t.Error("resuming a finished run succeeded")
	}
}

// TestPlanSavedBeforeStarted checks, as each run's started event is
// written, that its plan can already be loaded: a run killed right after it
// started can be resumed.
func TestPlanSavedBeforeStarted(t *testing.T) {
	p, dir := fixture{"main.hcl": toolAgentHCL("calc", "calculator", "", ""), "unused.json": `{"turns":[]}`}.compile(t)
	m := scriptedModel(t, `{"turns":[{"content":"done"}]}`)
	var stateDir string
	checked := 0
	e, _ := newEngine(t, p, dir, func(o *Options) {
		withModel(m)(o)
		stateDir = o.StateDir
		o.OnEvent = func(ev Event) {
			if ev.Type != journal.Started {
				return
			}
			checked++
			if _, err := journal.LoadPlan(stateDir, ev.RunID); err != nil {
				t.Errorf("at started: %v", err)
			}
		}
	})
	if res := mustRun(t, e, "a", "hi", RunOptions{}); res.Termination.Reason != Completed {
		t.Fatalf("got %s", res.Termination)
	}
	if checked != 1 {
		t.Errorf("%d started events", checked)
	}
}
