package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A delegation on Temporal through the real binaries: it runs as the
// child workflow RUN.d1; `symbi run --temporal` shows the delegated
// agent's events as they happen (here, while it waits for a person), once
// each; `symbi approve --temporal` lists the request the delegation waits
// on and grants it; the run ends with the local run's answer.
func TestTemporalDelegationApprovedLive(t *testing.T) {
	addr := temporalService(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"agent.hcl": `
model "lead" {
  provider = "scripted"
  script   = "lead.json"
}
model "worker" {
  provider = "scripted"
  script   = "worker.json"
}
tool "calculator" {
  description = "Evaluate an arithmetic expression"
  builtin     = "calculator"
}
policy "team" {
  rules {
    allow = ["delegate"]
    ask   = ["calculator"]
  }
}
agent "lead" {
  model     = model.lead
  delegates = [agent.worker]
  policies  = [policy.team]
}
agent "worker" {
  model    = model.worker
  tools    = [tool.calculator]
  policies = [policy.team]
}
`,
		"lead.json": `{"turns": [
  {"when": "add", "tool_calls": [{"id": "d1", "name": "delegate", "arguments": {"target": "worker", "task": "add 1 and 1"}}]},
  {"when": "It is 2", "content": "The worker says 2."},
  {"content": "No answer."}
]}`,
		"worker.json": `{"turns": [
  {"when": "add", "tool_calls": [{"id": "c1", "name": "calculator", "arguments": {"expression": "1 + 1"}}]},
  {"when": "^2$", "content": "It is 2."},
  {"when": "not approved|denied", "content": "I was not allowed."}
]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	queue := "e2e-delegation-" + time.Now().Format("150405.000000")
	start(t, call{dir: dir, timeout: 10 * time.Minute}, "worker", "--temporal", addr, "--task-queue", queue, ".")

	// The live output goes to a file the test reads while the run waits.
	live := filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stdout strings.Builder
	cmd := exec.Command(symbiBin, "run", "--temporal="+addr, "--task-queue", queue, "--agent", "lead", ".", "add 1 and 1")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, cleanEnv(), &stdout, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	shown := func() string { b, _ := os.ReadFile(live); return string(b) }

	var listed result
	pollUntil(t, "the delegation's approval request", 2*time.Minute, func() bool {
		listed = symbi(t, call{dir: dir}, "approve", "--temporal="+addr)
		return strings.Contains(listed.stdout, ".d1~a1")
	})
	id := strings.Fields(listed.stdout)[0]
	if !strings.HasSuffix(id, ".d1~a1") || !strings.Contains(listed.stdout, "calculator") {
		t.Fatalf("symbi approve --temporal lists:\n%s", listed.stdout)
	}
	// The delegated agent's call, shown while its workflow waits.
	pollUntil(t, "the delegated agent's call in the live output", time.Minute, func() bool {
		return strings.Contains(shown(), "→ calculator")
	})
	dec := symbi(t, call{dir: dir}, "approve", "--temporal="+addr, "--by", "alice", id)
	if dec.code != 0 || !strings.Contains(dec.stdout, "approved "+id+" by alice") {
		t.Fatalf("symbi approve: %s", dec)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the run: %v\n%s\n%s", err, stdout.String(), shown())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the approved run did not end:\n%s", shown())
	}
	out := shown()
	if strings.TrimSpace(stdout.String()) != "The worker says 2." || !strings.Contains(out, "completed") {
		t.Fatalf("the run printed %q\n%s", stdout.String(), out)
	}
	for _, line := range []string{"⇒ delegate to worker", "→ calculator", "⇐ worker completed"} {
		if n := strings.Count(out, line); n != 1 {
			t.Errorf("%q shown %d times, want once:\n%s", line, n, out)
		}
	}
	show := symbi(t, call{dir: dir}, "runs", "show", "--temporal="+addr, strings.TrimSuffix(id, ".d1~a1"))
	if show.code != 0 || !strings.Contains(show.stdout, "approval") || !strings.Contains(show.stdout, "alice") {
		t.Errorf("runs show --temporal: want the delegation's approval in the run's timeline\n%s", show)
	}
}
