package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// The crash suite's size. SYMBI_CRASH_KILLS raises the number of kills (the
// long variant: SYMBI_CRASH_KILLS=500 go test ./e2e -run TestCrashSuite
// -timeout 1h); SYMBI_CRASH_SEED replays a run's random choices (kill
// points and latencies; the machine's timing still varies).
const (
	crashKillsDefault = 32
	crashSteps        = 6 // appends per run
	crashWorkers      = 2
)

// crashReport is what the suite counts; every count but kills, runs,
// resumes and unknown must stay 0.
type crashReport struct {
	kills, runs, resumes int
	unknown              int            // calls reported "outcome unknown" (not run again)
	duplicates           int            // a call (idempotency key) or a step carried out more than once
	losses               int            // a completed write missing from the journal, a journalled result without its effect, a dispatched call never settled
	orphans              int            // tool processes alive, or writing, after symbi died
	unreadable           int            // journals that cannot be read back
	unfinished           int            // runs that did not complete after their resumes
	keyless              int            // lines written by a call that had no idempotency key
	killedAfter          map[string]int // the last journal line before each kill, by type
	problems             []string
}

func (c *crashReport) add(o crashReport) {
	c.kills += o.kills
	c.runs += o.runs
	c.resumes += o.resumes
	c.unknown += o.unknown
	c.duplicates += o.duplicates
	c.losses += o.losses
	c.orphans += o.orphans
	c.unreadable += o.unreadable
	c.unfinished += o.unfinished
	c.keyless += o.keyless
	for k, n := range o.killedAfter {
		if c.killedAfter == nil {
			c.killedAfter = map[string]int{}
		}
		c.killedAfter[k] += n
	}
	c.problems = append(c.problems, o.problems...)
}

func (c *crashReport) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func envInt(t *testing.T, name string, def int64) int64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// TestCrashSuite kills real `symbi run` and `symbi resume` processes with
// SIGKILL at random points of a tool loop whose tool is a real process
// that appends to a file, resumes each run until it completes, and checks
// the file against the journal: no write tool call carried out twice (with
// the default on_resume), no loss, no tool process outliving symbi, every
// journal readable.
func TestCrashSuite(t *testing.T) {
	t.Parallel()
	needProc(t)
	kills := int(envInt(t, "SYMBI_CRASH_KILLS", crashKillsDefault))
	seed := uint64(envInt(t, "SYMBI_CRASH_SEED", time.Now().UnixNano()))
	t.Logf("crash suite: seed %d (SYMBI_CRASH_SEED=%d replays it), at least %d kills", seed, seed, kills)
	tool := crashtool(t)
	dir := fixture(t, "crash/suite")

	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	intn := func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
	srv := fakeserver.New(t, fakeserver.WithoutHistory(), fakeserver.WithHandler(func(_ int, req fakeserver.Request) fakeserver.Reply {
		return crashTurn(req.Chat, intn)
	}))

	var total crashReport
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)+2))
			var rep crashReport
			for i := 0; rep.kills < (kills+crashWorkers-1)/crashWorkers; i++ {
				rep.add(crashRun(t, dir, tool, srv.URL(), r, fmt.Sprintf("w%d-%d", w, i)))
			}
			mu.Lock()
			total.add(rep)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("crash suite: seed %d: %d kills over %d runs and %d resumes; %d calls reported outcome unknown; duplicates %d, losses %d, orphans %d, unreadable journals %d, unfinished runs %d, calls without an idempotency key %d",
		seed, total.kills, total.runs, total.resumes, total.unknown, total.duplicates, total.losses, total.orphans, total.unreadable, total.unfinished, total.keyless)
	for _, p := range total.problems {
		t.Error(p)
	}
	t.Logf("crash suite: kills landed after %s", killPoints(total.killedAfter))
	if total.keyless > 0 {
		t.Errorf("%d calls ran without an idempotency key", total.keyless)
	}
	if total.kills < kills {
		t.Errorf("%d kills, want at least %d", total.kills, kills)
	}
}

// crashTurn is the fake model: the next of crashSteps appends, counted by
// the turns with tool calls so far (so a redone call asks for the same
// step), every other one beside a calculator call, then the answer.
func crashTurn(chat openai.ChatCompletionRequest, intn func(int) int) fakeserver.Reply {
	n := 1
	for _, m := range chat.Messages {
		if m.Role == openai.ChatMessageRoleAssistant && len(m.ToolCalls) > 0 {
			n++
		}
	}
	usage := &provider.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55}
	latency := time.Duration(intn(40)) * time.Millisecond
	if n > crashSteps {
		return fakeserver.Reply{Content: fmt.Sprintf("%d steps done", crashSteps), Usage: usage, Latency: latency}
	}
	calls := []fakeserver.ToolCall{{ID: fmt.Sprintf("a%d", n), Name: "append", Arguments: fmt.Sprintf(`{"n":%d,"before_ms":%d,"after_ms":%d}`, n, intn(40), intn(40))}}
	if n%2 == 0 {
		calls = append(calls, fakeserver.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "calculator", Arguments: fmt.Sprintf(`{"expression":"%d*2"}`, n)})
	}
	return fakeserver.Reply{ToolCalls: calls, Usage: usage, Latency: latency}
}

// crashRun runs the suite's agent once: started, killed at a random point,
// then resumed (and now and then killed again) until it completes; then it
// checks the log against the journal.
func crashRun(t *testing.T, dir, tool, baseURL string, rng *rand.Rand, name string) crashReport {
	var rep crashReport
	rep.runs++
	work := t.TempDir()
	state := filepath.Join(work, "state")
	log := filepath.Join(work, "log")
	pids := filepath.Join(work, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	vars := []string{"--var", "base_url=" + baseURL, "--var", "tool=" + tool, "--var", "log=" + log, "--var", "pids=" + pids}
	p := start(t, call{dir: dir}, append(append([]string{"run", "--state-dir", state}, vars...), ".", "go")...)
	killed, r := rep.killAt(t, p, time.Duration(10+rng.IntN(900))*time.Millisecond, state, pids, log, name)
	if !killed {
		// Finished before the kill point: an uninterrupted run, checked
		// like the others.
		if r.code != 0 {
			rep.unfinished++
			rep.problem("%s: symbi run:\n%s", name, r)
			return rep
		}
		rep.check(t, state, onlyRun(t, state), log, name)
		return rep
	}
	runs, err := journal.ListRuns(state)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		return rep // killed before the run existed
	}
	id := runs[0].ID
	for attempt := 1; ; attempt++ {
		if evs, err := journal.ReadFile(journal.Path(state, id)); err != nil {
			rep.unreadable++
			rep.problem("%s: journal of run %s unreadable after a kill: %v", name, id, err)
			return rep
		} else if len(evs) == 0 {
			return rep // killed before its first line: nothing ran
		} else if evs[len(evs)-1].Type == journal.Terminated {
			break // killed after its last line: finished
		}
		rep.resumes++
		rp := start(t, call{dir: t.TempDir()}, "resume", "--state-dir", state, id)
		var r result
		if attempt <= 3 && rng.IntN(3) == 0 {
			var killed bool
			if killed, r = rep.killAt(t, rp, time.Duration(10+rng.IntN(600))*time.Millisecond, state, pids, log, name); killed {
				continue
			}
		} else {
			r = rp.wait(t)
		}
		if r.code != 0 {
			rep.unfinished++
			rep.problem("%s: symbi resume %s:\n%s", name, id, r)
			return rep
		}
		break
	}
	rep.check(t, state, id, log, name)
	return rep
}

// killAt SIGKILLs p after d unless it ended before, and then looks for
// tool processes that outlived it or wrote after its death. It reports
// whether p was killed and, when it was not, how it ended.
func (rep *crashReport) killAt(t *testing.T, p *process, d time.Duration, state, pids, log, name string) (bool, result) {
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	select {
	case err := <-waited:
		r := result{stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.started)}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			r.code = exit.ExitCode()
		} else if err != nil {
			r.code = -1
		}
		return false, r
	case <-time.After(d):
	}
	p.cmd.Process.Kill()
	<-waited
	rep.kills++
	rep.noteKill(state)
	before := fileSize(log)
	if left := survivors(t, pids, 5*time.Second); len(left) > 0 {
		rep.orphans += len(left)
		rep.problem("%s: %d tool process(es) alive 5 s after symbi was killed", name, len(left))
	}
	if after := fileSize(log); after != before {
		rep.orphans++
		rep.problem("%s: the log grew from %d to %d bytes after symbi was killed", name, before, after)
	}
	return true, result{}
}

// noteKill records the last journal line before a kill (none: the run
// had not started its journal).
func (rep *crashReport) noteKill(state string) {
	last := "nothing"
	if runs, _ := journal.ListRuns(state); len(runs) == 1 {
		if evs, _ := journal.ReadFile(journal.Path(state, runs[0].ID)); len(evs) > 0 {
			last = evs[len(evs)-1].Type
		}
	}
	if rep.killedAfter == nil {
		rep.killedAfter = map[string]int{}
	}
	rep.killedAfter[last]++
}

func killPoints(m map[string]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// check compares a completed run's log with its journal.
func (rep *crashReport) check(t *testing.T, state, id, log, name string) {
	evs, err := journal.ReadFile(journal.Path(state, id))
	if err != nil {
		rep.unreadable++
		rep.problem("%s: journal of run %s: %v", name, id, err)
		return
	}
	if last := evs[len(evs)-1]; last.Type != journal.Terminated {
		rep.unfinished++
		rep.problem("%s: run %s ends with %s", name, id, last.Type)
	} else if end := terminated(t, evs); end.Reason != "completed" {
		rep.unfinished++
		rep.problem("%s: run %s ended %s: %s", name, id, end.Reason, end.Error)
	}
	// What the journal says about each append call, by idempotency key.
	type callState struct{ dispatched, result, unknown bool }
	calls := map[string]*callState{}
	get := func(k string) *callState {
		if calls[k] == nil {
			calls[k] = &callState{}
		}
		return calls[k]
	}
	for _, ev := range evs {
		var d struct {
			Calls    []journal.DispatchedCall `json:"calls"`
			CallID   string                   `json:"call_id"`
			Tool     string                   `json:"tool"`
			Error    string                   `json:"error"`
			Retried  bool                     `json:"retried"`
			Appended string                   `json:"output"`
		}
		if len(ev.Data) > 0 && json.Unmarshal(ev.Data, &d) != nil {
			rep.problem("%s: %s event %d: bad data", name, ev.Type, ev.Seq)
			continue
		}
		switch ev.Type {
		case journal.ToolsDispatched:
			for _, c := range d.Calls {
				if c.Tool == "append" {
					get(idempotencyKey(id, ev.Iteration, c.CallID)).dispatched = true
				}
			}
		case journal.ToolResult:
			if d.Tool == "append" && d.Error == "" {
				get(idempotencyKey(id, ev.Iteration, d.CallID)).result = true
			} else if d.Tool == "append" {
				rep.problem("%s: append %s failed: %s", name, d.CallID, d.Error)
			}
		case evToolOutcomeUnknown:
			if !d.Retried {
				get(idempotencyKey(id, ev.Iteration, d.CallID)).unknown = true
				rep.unknown++
			}
		}
	}
	// What the tool did, by idempotency key and by step.
	b, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	done := map[string]int{}
	steps := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		key, step, _ := strings.Cut(line, " ")
		steps[step]++
		if key == "" {
			rep.keyless++
			continue
		}
		done[key]++
	}
	keyed := len(done) > 0 || len(steps) == 0 // a symbi that passes no keys leaves nothing to match
	stepDups, keyDups := 0, 0
	for step, n := range steps {
		if n > 1 {
			stepDups += n - 1
			rep.problem("%s: step %s carried out %d times", name, step, n)
		}
	}
	for key, n := range done {
		if n > 1 {
			keyDups += n - 1
			rep.problem("%s: call %s carried out %d times", name, key, n)
		}
		if c := calls[key]; c == nil || !c.dispatched {
			rep.losses++
			rep.problem("%s: call %s carried out without a tools_dispatched line", name, key)
		}
	}
	rep.duplicates += max(stepDups, keyDups)
	for key, c := range calls {
		if !keyed {
			break
		}
		switch {
		case c.result && done[key] == 0:
			rep.losses++
			rep.problem("%s: call %s has a result in the journal but never wrote its line", name, key)
		case c.dispatched && !c.result && !c.unknown:
			rep.losses++
			rep.problem("%s: call %s was dispatched and never settled", name, key)
		}
	}
}
