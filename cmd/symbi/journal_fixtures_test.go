package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/policy"
)

var (
	record     = flag.Bool("record", false, "record the journal fixtures that are missing (testdata/journals/*/format<N>) with this symbi, or with -record-with")
	recordWith = flag.String("record-with", "", "with -record: the symbi binary to record with (an older symbi, for its journal format), instead of this one")
)

// journalsDir holds a directory per mode: config/ (what its fixtures were
// recorded from), format<N>/ (the state directory a symbi of journal format
// N left: key, runs/<id>/journal.jsonl and plan.json) and format<N>.golden
// (what TestJournalFixtures expects of it).
const journalsDir = "../../testdata/journals"

// A fixtureRecipe says how a mode's fixture is recorded: one `symbi run`
// per run, each cut where a crash would cut it when cut is set.
type fixtureRecipe struct {
	args    []string // symbi run's arguments after the configuration
	approve bool     // answer the run's approval requests with symbi approve
	cuts    []journalCut
}

// journalCut cuts a recorded journal where a process killed at some moment
// leaves it: keep says how many of its events stay; torn adds the first half
// of the next line, as a write cut short by a power loss leaves it.
type journalCut struct {
	name string
	keep func([]journal.Event) int
	torn bool
}

// before keeps the events before the first one of the type and iteration
// given; through keeps that one too (-1: there is none).
func before(typ string, iteration int) func([]journal.Event) int {
	return func(evs []journal.Event) int {
		return slices.IndexFunc(evs, func(ev journal.Event) bool { return ev.Type == typ && ev.Iteration == iteration })
	}
}

func through(typ string, iteration int) func([]journal.Event) int {
	return func(evs []journal.Event) int {
		if n := before(typ, iteration)(evs); n >= 0 {
			return n + 1
		}
		return -1
	}
}

var fixtureRecipes = map[string]fixtureRecipe{
	"simple":       {args: []string{"Say hello."}},
	"react":        {args: []string{"What is 6 * 7?"}},
	"reflect":      {args: []string{"--agent", "writer", "In one sentence: why is the sky blue?"}},
	"plan_execute": {args: []string{"Is 6 * 7 equal to 100 - 58?"}},
	"best_of_n":    {args: []string{"--best-of", "answer", "What is 6 * 7? Answer with the number only."}},
	"delegation":   {args: []string{"--agent", "lead", "What is 6 * 7?"}},
	"approval":     {args: []string{"Clean up the old log."}, approve: true},
	"interrupted": {args: []string{"What is 6 * 7?"}, cuts: []journalCut{
		// Killed while the model thought about the calculator's answer
		// (format 2's last line is its model_call_started).
		{name: "in the model call", keep: before(journal.ReasoningComplete, 2)},
		// Killed while the tool that writes ran: dispatched, no result.
		{name: "in the writing tool", keep: through(journal.ToolsDispatched, 2)},
		// The same, and the result's line torn by a power loss.
		{name: "in the writing tool, torn", keep: through(journal.ToolsDispatched, 2), torn: true},
	}},
}

// TestJournalFixtures reads back the journals every journal format has
// left, as Temporal's workflow replayer reads checked-in histories: for
// each fixture it shows and verifies every run (symbi runs show, runs
// verify), resumes every interrupted one on a copy, with a fixed clock, and
// shows and verifies it again, and compares the whole with the fixture's
// golden file. A change that can no longer read, show or resume a journal
// an earlier symbi wrote fails here. -update rewrites the golden files;
// -record records the current format's fixtures where they are missing
// (docs/journal.md, "Fixtures"), and never rewrites one.
func TestJournalFixtures(t *testing.T) {
	modes, err := os.ReadDir(journalsDir)
	if err != nil {
		t.Fatal(err)
	}
	current := fmt.Sprintf("format%d", journal.FormatVersion)
	seen := map[string]bool{}
	for _, m := range modes {
		if !m.IsDir() {
			continue
		}
		mode := m.Name()
		seen[mode] = true
		dir := filepath.Join(journalsDir, mode)
		if _, ok := fixtureRecipes[mode]; !ok {
			t.Errorf("%s has no recipe in fixtureRecipes", dir)
			continue
		}
		if *record {
			recordFixture(t, mode, dir)
		}
		if _, err := os.Stat(filepath.Join(dir, current)); errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s has no fixture of journal format %d: record it with go test ./cmd/symbi -run TestJournalFixtures -record", dir, journal.FormatVersion)
		}
		formats, err := filepath.Glob(filepath.Join(dir, "format*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range formats {
			st, err := os.Stat(f)
			if err != nil || !st.IsDir() {
				continue
			}
			format := filepath.Base(f)
			t.Run(mode+"/"+format, func(t *testing.T) {
				got := replayFixture(t, dir, format)
				golden := filepath.Join(dir, format+".golden")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test ./cmd/symbi -run TestJournalFixtures -update writes it)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s differs (-want +got):\n%s", golden, diff)
				}
			})
		}
	}
	for mode := range fixtureRecipes {
		if !seen[mode] {
			t.Errorf("no fixture directory %s", filepath.Join(journalsDir, mode))
		}
	}
}

// replayFixture shows, verifies and resumes the runs of one fixture, on a
// copy, and returns what the commands printed, section by section.
func replayFixture(t *testing.T, dir, format string) string {
	state := filepath.Join(t.TempDir(), "state")
	copyTree(t, filepath.Join(dir, format), state)
	var b strings.Builder
	section := func(title string, out cmdOutput) {
		fmt.Fprintf(&b, "-- %s --\n", title)
		b.WriteString(out.String())
	}
	ids := runIDs(t, state)
	if len(ids) == 0 {
		t.Fatalf("%s holds no run", filepath.Join(dir, format))
	}
	section("runs", symbiCmd(t, "runs", "--state-dir", state))
	var interrupted []string
	for _, id := range ids {
		section("runs show "+id, symbiCmd(t, "runs", "show", "--state-dir", state, id))
		section("runs verify "+id, symbiCmd(t, "runs", "verify", "--state-dir", state, id))
		if evs, _, _ := journal.ReadToShow(state, id); journal.Summarize(evs).Status == journal.StatusIncomplete {
			interrupted = append(interrupted, id)
		}
	}
	for _, id := range interrupted {
		section("resume "+id, resumeFixture(t, dir, state, id))
		section("runs show "+id+" after resume", symbiCmd(t, "runs", "show", "--state-dir", state, id))
		section("runs verify "+id+" after resume", symbiCmd(t, "runs", "verify", "--state-dir", state, id))
	}
	return b.String()
}

// resumeFixture does what `symbi resume ID` does, printing with the same
// printer, but in the fixture's configuration directory (copied: a tool may
// write there), which the journal's base_dir cannot name on this machine,
// and with a clock stopped a second after the journal's last line, so the
// output is the same on every run of the test.
func resumeFixture(t *testing.T, dir, state, id string) cmdOutput {
	evs, _, err := journal.ReadToShow(state, id)
	if err != nil || len(evs) == 0 {
		return cmdOutput{stderr: fmt.Sprintf("Error: run %s: %v\n", id, err), code: exitFailure}
	}
	config := filepath.Join(t.TempDir(), "config")
	copyTree(t, filepath.Join(dir, "config"), config)
	now := evs[len(evs)-1].Time.Add(time.Second)
	var stdout, stderr bytes.Buffer
	lock, err := journal.Lock(state, id)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	out := newRunPrinter(&stdout, &stderr, false)
	res, err := engine.ResumeLocked(context.Background(), lock, engine.Options{
		BaseDir:   config,
		LookupEnv: func(string) (string, bool) { return "", false },
		OnEvent:   out.event,
		Approver:  nil, // no person here: an ask is a denial
		Now:       func() time.Time { return now },
		Rand:      zeroReader{},
	})
	out.close()
	code := exitOK
	if err != nil {
		// As symbi resume words it; the fixture's temporary paths are not
		// part of what is compared.
		fmt.Fprintf(&stderr, "Error: %s\n", strings.ReplaceAll(err.Error(), state, "$STATE"))
		code = exitInvalid
	} else {
		out.summary(res)
		if ee := (*exitError)(nil); errors.As(terminationExit(res.Termination), &ee) {
			code = ee.code
		}
	}
	return cmdOutput{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// cmdOutput is what a symbi command printed and its exit code.
type cmdOutput struct {
	stdout, stderr string
	code           int
}

func (o cmdOutput) String() string {
	s := o.stdout
	if o.stderr != "" {
		s += "[stderr]\n" + o.stderr
	}
	if o.code != 0 {
		s += "[exit " + strconv.Itoa(o.code) + "]\n"
	}
	return s
}

// symbiCmd runs a symbi command line in this process, as main does, with
// an empty standard input, and returns what it printed. Paths under the
// test's temporary directory are printed as $STATE, which the golden files
// may hold.
func symbiCmd(t *testing.T, args ...string) cmdOutput {
	t.Helper()
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetArgs(singleDashLongFlags(root, args))
	root.SetIn(strings.NewReader(""))
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.ExecuteContext(context.Background())
	code := exitOK
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(&stderr, "Error:", ee.msg)
		}
		code = ee.code
	case err != nil:
		fmt.Fprintln(&stderr, "Error:", err)
		code = exitInvalid
	}
	out := cmdOutput{stdout: stdout.String(), stderr: stderr.String(), code: code}
	for i, a := range args {
		if a == "--state-dir" && i+1 < len(args) {
			out.stdout = strings.ReplaceAll(out.stdout, args[i+1], "$STATE")
			out.stderr = strings.ReplaceAll(out.stderr, args[i+1], "$STATE")
		}
	}
	// Start times are printed in the local time zone.
	out.stdout = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n`).ReplaceAllString(out.stdout, "<started>\n")
	return out
}

// runIDs lists the runs of a state directory, in order.
func runIDs(t *testing.T, state string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(state, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids
}

// copyTree copies a directory, its files private to the user as symbi
// writes them (a state key that others can read is refused).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// recordFixture records a mode's fixture: it runs the recipe with symbi
// run (this one, or the binary -record-with names) on a copy of config/,
// and keeps the state directory's key and each run's journal and plan in
// dir/format<N>, N being the format the journals were written in. A
// fixture that exists is never rewritten.
func recordFixture(t *testing.T, mode, dir string) {
	t.Helper()
	recipe := fixtureRecipes[mode]
	work := t.TempDir()
	config, state := filepath.Join(work, "config"), filepath.Join(work, "state")
	copyTree(t, filepath.Join(dir, "config"), config)
	runs := max(1, len(recipe.cuts))
	for i := range runs {
		before := map[string]bool{}
		if _, err := os.Stat(filepath.Join(state, "runs")); err == nil {
			for _, id := range runIDs(t, state) {
				before[id] = true
			}
		}
		done := make(chan struct{})
		approved := make(chan struct{})
		go func() {
			defer close(approved)
			if recipe.approve {
				approveAll(t, state, done)
			}
		}()
		out := recordingSymbi(t, append([]string{"run", "--state-dir", state, config}, recipe.args...)...)
		close(done)
		<-approved
		if out.code != 0 {
			t.Fatalf("recording %s: symbi run:\n%s", mode, out)
		}
		var id string // the run's own: its sub-runs' ids add .d1, .e1, .c1, …
		for _, r := range runIDs(t, state) {
			if !before[r] && !strings.Contains(r, ".") {
				id = r
			}
		}
		if recipe.cuts != nil {
			cutRecorded(t, state, id, recipe.cuts[i])
		}
		if i+1 < runs {
			time.Sleep(1100 * time.Millisecond) // run ids are to the second
		}
	}
	format := 1 // journals of format 1 do not say so
	if evs, _, err := journal.ReadToShow(state, runIDs(t, state)[0]); err == nil && len(evs) > 0 {
		var st journal.StartedData
		if evs[0].Decode(&st) == nil && st.JournalFormat > 0 {
			format = st.JournalFormat
		}
	}
	dst := filepath.Join(dir, fmt.Sprintf("format%d", format))
	if _, err := os.Stat(dst); err == nil {
		t.Logf("%s exists: left as it is", dst)
		return
	}
	if _, err := os.Stat(filepath.Join(state, "key")); err == nil { // format 1 has none
		copyFile(t, filepath.Join(state, "key"), filepath.Join(dst, "key"))
	}
	for _, id := range runIDs(t, state) {
		for _, f := range []string{"journal.jsonl", journal.PlanFileName} {
			from := filepath.Join(journal.RunDir(state, id), f)
			if _, err := os.Stat(from); err == nil {
				copyFile(t, from, filepath.Join(dst, "runs", id, f))
			}
		}
	}
	t.Logf("recorded %s", dst)
}

// recordingSymbi runs a symbi command for recording: in this process, or
// with the binary -record-with names.
func recordingSymbi(t *testing.T, args ...string) cmdOutput {
	t.Helper()
	if *recordWith == "" {
		return symbiCmd(t, args...)
	}
	cmd := exec.Command(*recordWith, args...)
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := cmdOutput{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		out.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// approveAll answers every approval request that appears in state's queue
// with symbi approve, until done.
func approveAll(t *testing.T, state string, done <-chan struct{}) {
	q := policy.NewQueue(state)
	for {
		select {
		case <-done:
			return
		case <-time.After(50 * time.Millisecond):
		}
		reqs, _ := q.Pending()
		for _, r := range reqs {
			if out := recordingSymbi(t, "approve", "--state-dir", state, "--by", "fixture", "--reason", "recorded for the fixtures", r.ID); out.code != 0 {
				t.Errorf("symbi approve: %s", out)
			}
		}
	}
}

// cutRecorded cuts run id's journal as cut says.
func cutRecorded(t *testing.T, state, id string, cut journalCut) {
	t.Helper()
	path := journal.Path(state, id)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := journal.ReadAll(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := cut.keep(evs)
	if n < 0 {
		t.Fatalf("%s: no event to cut at", cut.name)
	}
	lines := strings.SplitAfter(string(data), "\n")
	kept := strings.Join(lines[:n], "")
	if cut.torn {
		kept += lines[n][:len(lines[n])/2]
	}
	if err := os.WriteFile(path, []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
}
