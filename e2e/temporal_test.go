package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// The Temporal runtime through the real binaries against a real Temporal
// service: the Temporal CLI's dev server. .ci/run starts one and sets
// SYMBI_TEMPORAL_ADDRESS (and SYMBI_TEMPORAL_REQUIRED, so that a missing
// server fails these tests instead of skipping them). Without it, each
// test starts a dev server of its own from SYMBI_TEMPORAL or the binary
// scripts/temporal.sh keeps beside the Go build cache, and skips, saying
// so, when there is none.

// temporalSetup builds symbi-temporal beside the symbi binary, once.
var temporalBuild = sync.OnceValue(func() error {
	build := exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(symbiBin), "symbi-temporal"), "./cmd/symbi-temporal")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/symbi-temporal: %v\n%s", err, out)
	}
	return nil
})

// temporalService returns the address of a Temporal service for the test.
func temporalService(t *testing.T) string {
	t.Helper()
	if err := temporalBuild(); err != nil {
		t.Fatal(err)
	}
	required := os.Getenv("SYMBI_TEMPORAL_REQUIRED") != ""
	if addr := os.Getenv("SYMBI_TEMPORAL_ADDRESS"); addr != "" {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("SYMBI_TEMPORAL_ADDRESS=%s: %v", addr, err)
		}
		c.Close()
		return addr
	}
	bin := os.Getenv("SYMBI_TEMPORAL")
	if bin == "" {
		if cache, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			bin = filepath.Join(filepath.Dir(strings.TrimSpace(string(cache))), "symbi-tools", "temporal-v1.5.1", "temporal")
		}
	}
	if _, err := os.Stat(bin); err != nil {
		if required {
			t.Fatalf("no Temporal dev server: SYMBI_TEMPORAL_REQUIRED is set and %s is missing (scripts/temporal.sh builds it)", bin)
		}
		t.Skipf("no Temporal CLI (%s): scripts/temporal.sh builds it; these tests need its dev server", bin)
	}
	port, http, metrics := freePort(t), freePort(t), freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", fmt.Sprint(port), "--http-port", fmt.Sprint(http), "--metrics-port", fmt.Sprint(metrics),
		"--db-filename", filepath.Join(t.TempDir(), "temporal.db"), "--log-level", "error")
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatalf("starting the Temporal dev server: %v", err)
	}
	t.Cleanup(func() {
		srv.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			srv.Process.Kill()
			<-done
		}
	})
	pollUntil(t, "the dev server to listen", 60*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pollUntil polls cond until it holds, failing the test after limit.
func pollUntil(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// temporalModel answers every run the same way, whatever order the runs'
// calls arrive in: a tool call first (write when the input asks to write,
// approve_me when it asks for approval, else the calculator), then, after
// the tool's result, the answer. latency is each reply's.
func temporalModel(t *testing.T, latency time.Duration) *fakeserver.Server {
	return fakeserver.New(t, fakeserver.WithoutHistory(), fakeserver.WithLatency(latency), fakeserver.WithHandler(func(_ int, req fakeserver.Request) fakeserver.Reply {
		msgs := req.Chat.Messages
		if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
			return fakeserver.Text("The answer ", "is ", strings.TrimSpace(msgs[len(msgs)-1].Content), ".")
		}
		user := ""
		for _, m := range msgs {
			if m.Role == "user" {
				user = m.Content
			}
		}
		call := fakeserver.ToolCall{ID: "call_1", Name: "calculator", Arguments: `{"expression":"6 * 7"}`}
		switch {
		case strings.Contains(user, "write"):
			call = fakeserver.ToolCall{ID: "call_1", Name: "write", Arguments: `{"line":"` + user + `"}`}
		case strings.Contains(user, "approval"):
			call = fakeserver.ToolCall{ID: "call_1", Name: "approve_me", Arguments: `{"expression":"1 + 1"}`}
		}
		return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{call}}
	}))
}

// temporalRig is a service, a task queue of the test's own, a fake model
// and a copy of the fixture.
type temporalRig struct {
	addr, queue, dir, url string
}

func newTemporalRig(t *testing.T, latency time.Duration) *temporalRig {
	t.Helper()
	addr := temporalService(t)
	srv := temporalModel(t, latency)
	return &temporalRig{addr: addr, queue: fmt.Sprintf("e2e-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano()), dir: fixture(t, "temporal"), url: srv.URL()}
}

// worker starts `symbi worker` on dir (the rig's fixture when empty).
func (r *temporalRig) worker(t *testing.T, dir string) *process {
	t.Helper()
	if dir == "" {
		dir = r.dir
	}
	// The service holds a run's tasks until a worker polls for them.
	return start(t, call{dir: dir, timeout: 10 * time.Minute}, "worker", "--temporal", r.addr, "--task-queue", r.queue, ".")
}

// run is `symbi run --temporal` of the fixture with input.
func (r *temporalRig) run(t *testing.T, c call, input string, extra ...string) *process {
	t.Helper()
	c.dir = r.dir
	args := append([]string{"run", "--temporal", r.addr, "--task-queue", r.queue, "--var", "base_url=" + r.url}, extra...)
	return start(t, c, append(args, ".", input)...)
}

// summary is the --json summary line of a run's output.
type summary struct {
	Answer      string `json:"answer"`
	Run         string `json:"run"`
	Iterations  int    `json:"iterations"`
	Termination struct {
		Reason string `json:"reason"`
	} `json:"termination"`
	Usage map[string]any `json:"usage"`
}

func temporalSummaryOf(t *testing.T, r result) summary {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Event string `json:"event"`
			summary
		}
		if json.Unmarshal(sc.Bytes(), &s) == nil && s.Event == "summary" {
			return s.summary
		}
	}
	t.Fatalf("no summary in %s", r)
	return summary{}
}

// Twenty runs at once over two workers: each ends with the answer and
// the usage the local engine gives for the same model.
func TestTemporalTwentyRunsTwoWorkers(t *testing.T) {
	r := newTemporalRig(t, 50*time.Millisecond)
	state := t.TempDir()
	localRun := symbi(t, call{dir: r.dir}, "run", "--json", "--state-dir", state, "--var", "base_url="+r.url, ".", "What is 6 * 7?")
	if localRun.code != 0 {
		t.Fatalf("local run: %s", localRun)
	}
	want := temporalSummaryOf(t, localRun)
	r.worker(t, "")
	r.worker(t, "")
	runs := make([]*process, 20)
	for i := range runs {
		runs[i] = r.run(t, call{}, "What is 6 * 7?", "--json")
	}
	for i, p := range runs {
		res := p.wait(t)
		if res.code != 0 {
			t.Fatalf("run %d: %s", i, res)
		}
		got := temporalSummaryOf(t, res)
		if got.Answer != want.Answer || got.Termination.Reason != "completed" || got.Iterations != want.Iterations || fmt.Sprint(got.Usage) != fmt.Sprint(want.Usage) {
			t.Errorf("run %d: %+v\nlocal: %+v", i, got, want)
		}
	}
	list := symbi(t, call{dir: r.dir}, "runs", "--temporal="+r.addr, "--json")
	if n := strings.Count(list.stdout, `"status":"completed"`); n < 20 {
		t.Errorf("symbi runs --temporal lists %d completed runs:\n%s", n, list)
	}
}

// A worker killed in the middle of a write tool's call: the call runs
// again on the other worker with the same idempotency key, the write is
// made once, every run ends, and its timeline is whole.
func TestTemporalWorkerKilled(t *testing.T) {
	r := newTemporalRig(t, 0)
	if err := os.WriteFile(filepath.Join(r.dir, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := r.worker(t, "")
	const n = 4
	ids := make([]string, n)
	for i := range ids {
		res := r.run(t, call{}, fmt.Sprintf("write entry %d", i), "--detach").wait(t)
		if res.code != 0 {
			t.Fatalf("detached run: %s", res)
		}
		ids[i] = strings.TrimSpace(res.stdout)
	}
	lines := func(name string) []string {
		b, _ := os.ReadFile(filepath.Join(r.dir, name))
		return strings.Fields(string(b))
	}
	// Every run is inside its write call (which holds on for seconds after
	// its effect) when the worker dies.
	pollUntil(t, "every run to be in its write call", 2*time.Minute, func() bool { return len(lines("invocations")) >= n })
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t)
	r.worker(t, "")
	for _, id := range ids {
		var show result
		pollUntil(t, "run "+id+" to end on the other worker", 3*time.Minute, func() bool {
			show = symbi(t, call{dir: r.dir}, "runs", "show", "--temporal="+r.addr, id)
			return strings.Contains(show.stdout, "terminated")
		})
		for _, want := range []string{"tools_dispatched", "tool_result", "completed", `"The answer is written."`} {
			if !strings.Contains(show.stdout, want) {
				t.Errorf("run %s's timeline lacks %s:\n%s", id, want, show.stdout)
			}
		}
	}
	effects, calls := lines("effects"), lines("invocations")
	slices.Sort(effects)
	if len(effects) != n || len(slices.Compact(slices.Clone(effects))) != n {
		t.Errorf("%d effects for %d runs (one each): %v", len(effects), n, effects)
	}
	for _, e := range effects {
		if !strings.HasSuffix(e, "/1/call_1") {
			t.Errorf("idempotency key %q is not workflow id / iteration / call id", e)
		}
	}
	if len(calls) <= n {
		t.Errorf("%d invocations: the killed worker's calls were not run again", len(calls))
	}
}

// An approval waits across a worker restart and is granted with symbi
// approve; Ctrl-C on another run that waits cancels its workflow.
func TestTemporalApprovalAcrossRestart(t *testing.T) {
	r := newTemporalRig(t, 0)
	a := r.worker(t, "")
	run := r.run(t, call{}, "needs approval")
	var listed result
	pollUntil(t, "the approval request", time.Minute, func() bool {
		listed = symbi(t, call{dir: r.dir}, "approve", "--temporal="+r.addr)
		return strings.Contains(listed.stdout, "~a1")
	})
	id := strings.Fields(listed.stdout)[0]
	if !strings.Contains(listed.stdout, "digest:    sha256:") || !strings.Contains(listed.stdout, "approve_me") {
		t.Errorf("symbi approve --temporal lists:\n%s", listed.stdout)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t)
	r.worker(t, "")
	dec := symbi(t, call{dir: r.dir}, "approve", "--temporal="+r.addr, "--by", "alice", id)
	if dec.code != 0 || !strings.Contains(dec.stdout, "approved "+id+" by alice") {
		t.Fatalf("symbi approve: %s", dec)
	}
	res := run.wait(t)
	if res.code != 0 || !strings.Contains(res.stdout, "The answer is 2.") || !strings.Contains(res.stderr, "completed") {
		t.Fatalf("the approved run: %s", res)
	}
	again := symbi(t, call{dir: r.dir}, "approve", "--temporal="+r.addr, "--by", "alice", id)
	if again.code != 2 {
		t.Errorf("a second decision on %s: %s", id, again)
	}

	waiting := r.run(t, call{}, "needs approval again")
	pollUntil(t, "the second request", time.Minute, func() bool {
		return strings.Contains(symbi(t, call{dir: r.dir}, "approve", "--temporal="+r.addr).stdout, "~a1")
	})
	waiting.cmd.Process.Signal(os.Interrupt)
	res = waiting.wait(t)
	if res.code != 130 || !strings.Contains(res.stderr, "cancelled") {
		t.Errorf("Ctrl-C: %s", res)
	}
}

// A worker whose copy of the policy differs refuses the run, naming the
// file, and symbi fails with that message.
func TestTemporalWorkerRefusesOtherPolicy(t *testing.T) {
	r := newTemporalRig(t, 0)
	other := t.TempDir()
	copyTree(t, r.dir, other)
	rego := filepath.Join(other, "policy.rego")
	b, err := os.ReadFile(rego)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rego, []byte(strings.Replace(string(b), `"allow", "reason": "arithmetic is harmless"`, `"deny", "reason": "no arithmetic"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r.worker(t, other)
	res := r.run(t, call{timeout: 2 * time.Minute}, "What is 6 * 7?").wait(t)
	if res.code != 4 || !strings.Contains(res.stderr, "policy.rego is sha256:") || !strings.Contains(res.stderr, "differ from the run's") {
		t.Fatalf("a run on a worker with another policy.rego: %s", res)
	}
}

// A worker whose copy of a script that a command tool runs differs
// refuses the run before anything runs, naming the script: the plan holds
// the tool's argv, the run's start the digest of the file it names.
func TestTemporalWorkerRefusesOtherScript(t *testing.T) {
	r := newTemporalRig(t, 0)
	other := t.TempDir()
	copyTree(t, r.dir, other)
	script := filepath.Join(other, "write.sh")
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(strings.Replace(string(b), `echo "written"`, `echo "written elsewhere"`, 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	r.worker(t, other)
	res := r.run(t, call{timeout: 2 * time.Minute}, "write entry 1").wait(t)
	if res.code != 4 || !strings.Contains(res.stderr, "write.sh is sha256:") || !strings.Contains(res.stderr, "differ from the run's") {
		t.Fatalf("a run on a worker with another write.sh: %s", res)
	}
	for _, dir := range []string{r.dir, other} {
		if _, err := os.Stat(filepath.Join(dir, "invocations")); !os.IsNotExist(err) {
			t.Errorf("the script ran in %s: %v", dir, err)
		}
	}
}

// An agent over MCP servers (the npm everything server, its own tools and
// a tool block wrapping another server's) runs on Temporal as locally: the
// worker starts the servers, keeps them for the next run of the plan, and
// stops them when it stops; the runs end with the local run's answer and
// usage.
func TestTemporalMCPServers(t *testing.T) {
	server := everythingServer(t)
	addr := temporalService(t)
	marker := t.TempDir()
	dir := writeConfig(t, everythingConfig(server, marker))
	// The worker keeps one engine per plan, and the scripted model's turns
	// with it: two runs' worth.
	turns := `{"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"message": "hi"}}, {"id": "c2", "name": "add", "arguments": {"a": 2, "b": 3}}]}, {"content": "Done."}`
	writeFile(t, dir, "script.json", `{"turns": [`+turns+`, `+turns+`]}`)
	localRun := symbi(t, call{dir: dir}, "run", "--json", "--state-dir", t.TempDir(), ".", "go")
	if localRun.code != 0 {
		t.Fatalf("local run: %s", localRun)
	}
	want := temporalSummaryOf(t, localRun)
	assertNoProcess(t, marker)

	queue := fmt.Sprintf("e2e-mcp-%d", time.Now().UnixNano())
	w := start(t, call{dir: dir, timeout: 10 * time.Minute}, "worker", "--temporal", addr, "--task-queue", queue, ".")
	var servers []string
	for i := range 2 {
		res := start(t, call{dir: dir, timeout: 3 * time.Minute}, "run", "--temporal", addr, "--task-queue", queue, "--json", ".", "go").wait(t)
		if res.code != 0 {
			t.Fatalf("run %d on Temporal: %s", i, res)
		}
		got := temporalSummaryOf(t, res)
		if got.Answer != want.Answer || got.Termination.Reason != "completed" || got.Iterations != want.Iterations || fmt.Sprint(got.Usage) != fmt.Sprint(want.Usage) {
			t.Errorf("run %d: %+v\nlocal: %+v", i, got, want)
		}
		for _, s := range []string{`"tool_result"`, `hi`, `"add"`} {
			if !strings.Contains(res.stdout, s) {
				t.Errorf("run %d's output lacks %s:\n%s", i, s, res.stdout)
			}
		}
		// The worker's servers outlive the run, and the next run of the
		// same plan uses them.
		now := processesMentioning(marker)
		if len(now) == 0 {
			t.Errorf("run %d: no server process on the worker", i)
		}
		if i == 1 && !slices.Equal(now, servers) {
			t.Errorf("the second run started other servers: %v, then %v", servers, now)
		}
		servers = now
	}
	w.cmd.Process.Signal(os.Interrupt)
	if res := w.wait(t); res.code != 0 {
		t.Errorf("the worker on SIGINT: %s", res)
	}
	assertNoProcess(t, marker)
}

// A server that changes its tools mid-run (notifications/tools/list_changed)
// on a worker: the workflow keeps offering the tools it listed, but the
// worker checks the new list against the lock before its next call of that
// server, and refuses to run the tool whose definition drifted (on_drift =
// "refuse"): the call fails as a tool's failure, naming the drift, and the
// changed echo never runs.
func TestTemporalLockListChanged(t *testing.T) {
	addr := temporalService(t)
	d := newDriftDir(t, buildDriftMCP(t, t.TempDir()), "", pinnedTools, listChangedScript)
	if r := d.symbi(t, "lock", "."); r.code != 0 {
		t.Fatalf("lock:\n%s", r)
	}
	queue := fmt.Sprintf("e2e-listchanged-%d", time.Now().UnixNano())
	w := start(t, call{dir: d.dir, timeout: 10 * time.Minute}, "worker", "--temporal", addr, "--task-queue", queue, ".")
	r := d.symbi(t, "run", "--temporal", addr, "--task-queue", queue, "--agent", "a", ".", "go")
	w.cmd.Process.Signal(os.Interrupt)
	w.wait(t)
	if !d.ran("mutate") {
		t.Fatalf("mutate did not run:\n%s", r)
	}
	if d.ran("echo") {
		t.Errorf("echo ran with a definition the lock does not pin:\n%s", r)
	}
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "changed its tools") || !strings.Contains(r.stdout+r.stderr, "on_drift") {
		t.Errorf("want the run to end with echo's call refused on the worker, naming the drift:\n%s", r)
	}
}
