package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/symbi-dev/symbi/budget"
)

var t0 = time.Date(2026, 12, 2, 13, 30, 0, 0, time.UTC)

// fakeClock ticks one millisecond per reading, so timestamps are distinct
// and predictable.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	now := t0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}

func mustCreate(t *testing.T, dir, id string, mode SyncMode) *Writer {
	t.Helper()
	w, err := Create(dir, id, mode, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestLineFormat(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r1", SyncBackground)
	if err := w.Record("researcher", 0, Started, StartedData{Input: "6 * 7 <ok> & done"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(Path(dir, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^\{"seq":1,"ts":"2026-12-02T13:30:00.001Z","run":"r1","agent":"researcher","iteration":0,"event":"started","data":\{"input":"6 \* 7 <ok> & done"\},"mac":"[0-9a-f]{64}"\}\n$`)
	if !want.Match(got) {
		t.Errorf("line:\n got %s\nwant %s", got, want)
	}
	if _, err := ReadRun(dir, "r1"); err != nil {
		t.Errorf("the line does not verify: %v", err)
	}
}

// encodeBody and the closing brace must write exactly what encoding/json
// would.
func TestEncodeLine(t *testing.T) {
	for _, ev := range []Event{
		{Seq: 1, Time: t0, RunID: "r", Agent: "agent.a", Type: Started},
		{Seq: 9223372036854775807, Time: t0.Add(123456789), RunID: "20261202T133000Z-4f3a9c1b", Iteration: 42, Type: ToolResult,
			Data: json.RawMessage("{\n  \"a\": [1, 2],\n  \"b\": \"<&>\\u003c\"\n}")},
		{Seq: 2, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Agent: "odd \"agent\"\n\u2028é<>&", Type: "x\\y", Data: json.RawMessage("null")},
		{Seq: 3, Time: t0.In(time.FixedZone("CET", 3600)), Iteration: -1, Type: Terminated, Data: json.RawMessage(`"s"`)},
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := encodeBody(&got, &ev); err != nil {
			t.Fatal(err)
		}
		got.WriteString("}\n")
		if got.String() != want.String() {
			t.Errorf("encodeBody:\n got %s\nwant %s", got.String(), want.String())
		}
	}
	var buf bytes.Buffer
	if err := encodeBody(&buf, &Event{Type: Started, Data: json.RawMessage("{broken")}); err == nil {
		t.Error("invalid data was encoded")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, mode := range []SyncMode{SyncBackground, SyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			w := mustCreate(t, dir, "run", mode)
			term := TerminatedData{Reason: "budget_exceeded", Limit: "max_total_tokens", Iterations: 3,
				Usage: budget.Amount{ModelCalls: 3, TotalTokens: 100512}, DurationMS: 42, Answer: "42"}
			for i, typ := range []string{Started, ReasoningComplete, ToolResult} {
				if err := w.Append(Event{Agent: "a", Iteration: i, Type: typ, Data: json.RawMessage(`{"k":1}`)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Record("a", 3, Terminated, term); err != nil {
				t.Fatal(err)
			}
			if w.Seq() != 4 {
				t.Errorf("Seq() = %d, want 4", w.Seq())
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			evs, err := ReadFile(w.Path())
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 4 {
				t.Fatalf("read %d events, want 4", len(evs))
			}
			for i, ev := range evs {
				if ev.Seq != int64(i+1) || ev.RunID != "run" || ev.Agent != "a" || !ev.Time.Equal(t0.Add(time.Duration(i+1)*time.Millisecond)) {
					t.Errorf("event %d = %+v", i, ev)
				}
			}
			var got TerminatedData
			if err := evs[3].Decode(&got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(term, got); diff != "" {
				t.Errorf("terminated data (-want +got):\n%s", diff)
			}
		})
	}
}

// A line is in the file as soon as Append returns, before any sync or
// Close: a process killed right after loses nothing.
func TestAddReturnsTheLine(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	got, err := w.Add(Event{Agent: "a", Type: ToolResult, Data: json.RawMessage(`{"output":"pw 42"}`)})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	evs, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(evs[0], got); diff != "" {
		t.Errorf("Add's event differs from the line written (-line +returned):\n%s", diff)
	}
	if string(got.Data) != `{"output":"pw 42"}` {
		t.Errorf("data %s", got.Data)
	}
}

func TestAppendReachesFileBeforeReturn(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	for i := 1; i <= 3; i++ {
		if err := w.Append(Event{Type: Started}); err != nil {
			t.Fatal(err)
		}
		evs, err := ReadFile(w.Path())
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != i {
			t.Fatalf("after %d appends the file holds %d events", i, len(evs))
		}
	}
}

func TestConcurrentAppend(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := w.Record(fmt.Sprint("cand", g), i, CandidateFinished, CandidateFinishedData{Index: g}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != goroutines*each {
		t.Fatalf("read %d events, want %d", len(evs), goroutines*each)
	}
	perAgent := map[string]int{}
	for _, ev := range evs {
		// Within one goroutine, order is kept.
		if ev.Iteration != perAgent[ev.Agent] {
			t.Fatalf("%s: iteration %d after %d", ev.Agent, ev.Iteration, perAgent[ev.Agent]-1)
		}
		perAgent[ev.Agent]++
	}
}

func TestWriterErrors(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncAlways)
	if err := w.Append(Event{}); err == nil {
		t.Error("an event without a type was accepted")
	}
	if err := w.Append(Event{Type: Started, Iteration: -1}); err == nil {
		t.Error("a negative iteration was accepted")
	}
	zero, _ := Create(dir, "zero", SyncBackground, WithClock(func() time.Time { return time.Time{} }))
	if err := zero.Append(Event{Type: Started}); err == nil {
		t.Error("an event at the zero time was accepted")
	}
	zero.Close()
	if _, err := Create(dir, "r", SyncAlways); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create of one run: %v, want fs.ErrExist", err)
	}
	for _, id := range []string{"", ".", "..", "a/b", `a\b`, "a\x00"} {
		if _, err := Create(dir, id, SyncAlways); err == nil {
			t.Errorf("Create accepted run id %q", id)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Append(Event{Type: Started}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := OpenAppend(dir, "missing", SyncAlways); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenAppend of a missing run: %v", err)
	}
}

func TestParseSyncMode(t *testing.T) {
	for in, want := range map[string]SyncMode{"": SyncBackground, "background": SyncBackground, "always": SyncAlways} {
		got, err := ParseSyncMode(in)
		if err != nil || got != want {
			t.Errorf("ParseSyncMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseSyncMode("sometimes"); err == nil || !strings.Contains(err.Error(), "background or always") {
		t.Errorf("ParseSyncMode(sometimes) = %v", err)
	}
}

func TestReaderTornLastLine(t *testing.T) {
	good := line(1, Started) + line(2, ReasoningComplete)
	for _, tail := range []string{`{"seq":3,"ts":"2026-12-`, `{`, `garbage`, line(3, ToolResult)[:20]} {
		r := NewReader(strings.NewReader(good + tail))
		evs, err := readAll(r)
		if err != nil {
			t.Fatalf("tail %q: %v", tail, err)
		}
		if len(evs) != 2 || !r.Torn() || r.Offset() != int64(len(good)) {
			t.Errorf("tail %q: %d events, torn %v, offset %d", tail, len(evs), r.Torn(), r.Offset())
		}
	}
	r := NewReader(strings.NewReader(good))
	if _, err := readAll(r); err != nil || r.Torn() {
		t.Errorf("clean journal: err %v, torn %v", err, r.Torn())
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"corrupt middle", line(1, Started) + "{not json}\n" + line(3, Terminated), 2, "not a journal event"},
		{"complete but bad last", line(1, Started) + "{\n", 2, "not a journal event"},
		{"empty line", line(1, Started) + "\n" + line(2, Terminated), 2, "empty line"},
		{"seq gap", line(1, Started) + line(3, Terminated), 2, "seq 3 follows seq 1"},
		{"seq repeat", line(1, Started) + line(1, Started), 2, "seq 1 follows seq 1"},
		{"no type", line(1, ""), 1, "no \"event\""},
		{"no seq", `{"ts":"2026-12-02T13:30:00Z","event":"started"}` + "\n", 1, "seq 0"},
		{"no ts", `{"seq":1,"event":"started"}` + "\n", 1, "timestamp"},
		{"wrong types", `{"seq":"1","ts":"2026-12-02T13:30:00Z","event":"started"}` + "\n", 1, "not a journal event"},
		{"array", "[]\n", 1, "not a journal event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadAll(strings.NewReader(tt.in))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LineError", err)
			}
			if le.Line != tt.line || !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), fmt.Sprintf("journal line %d", tt.line)) {
				t.Errorf("err = %v, want line %d and %q", err, tt.line, tt.msg)
			}
		})
	}
}

func TestReaderLongLine(t *testing.T) {
	big := strings.Repeat("x", 300<<10) // well past bufio.Scanner's 64 KiB
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	for range 2 {
		if err := w.Record("a", 0, ToolResult, ToolResultData{Output: big}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	evs, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	var d ToolResultData
	if len(evs) != 2 || evs[1].Decode(&d) != nil || d.Output != big {
		t.Errorf("long lines did not survive: %d events", len(evs))
	}
}

func TestReaderLineLimit(t *testing.T) {
	long := line(2, strings.Repeat("x", 200<<10))
	r := NewReader(strings.NewReader(line(1, Started) + long + line(3, Started)))
	r.maxLine = 100 << 10
	_, err := readAll(r)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrLineTooLong) {
		t.Errorf("err = %v, want ErrLineTooLong on line 2", err)
	}
	r = NewReader(strings.NewReader(line(1, Started) + long))
	r.maxLine = len(long) - 1 // the newline does not count
	if evs, err := readAll(r); err != nil || len(evs) != 2 {
		t.Errorf("a line at the limit: %d events, %v", len(evs), err)
	}
}

func TestReadFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	os.WriteFile(path, []byte(line(1, Started)+"oops\n"), 0o600)
	evs, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v", err)
	}
	if len(evs) != 1 {
		t.Errorf("events before the bad line: %d, want 1", len(evs))
	}
}

func TestOpenAppendResumes(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	for range 3 {
		w.Append(Event{Type: Started})
	}
	w.Close()
	// A crash mid-write leaves a torn line.
	f, _ := os.OpenFile(w.Path(), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":4,"ts":"2026-12-02T13:3`)
	f.Close()

	w2, err := OpenAppend(dir, "r", SyncAlways, WithClock(fakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	if w2.Seq() != 3 {
		t.Errorf("resumed at seq %d, want 3", w2.Seq())
	}
	if err := w2.Append(Event{Type: Started}); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	evs, err := ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 || evs[3].Seq != 4 || evs[3].RunID != "r" {
		t.Errorf("after resume: %d events, last %+v", len(evs), evs[len(evs)-1])
	}
}

func TestOpenAppendRefusesCorruptJournal(t *testing.T) {
	dir := t.TempDir()
	w := mustCreate(t, dir, "r", SyncBackground)
	for range 3 {
		w.Append(Event{Type: Started})
	}
	w.Close()
	lines := strings.SplitAfter(readString(t, w.Path()), "\n")
	os.WriteFile(w.Path(), []byte(lines[0]+"}{\n"+lines[2]), 0o600)
	_, err := OpenAppend(dir, "r", SyncBackground)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrTampered) {
		t.Errorf("err = %v, want a LineError on line 2", err)
	}
	// A journal from before the chain is refused too, from its first line.
	os.WriteFile(w.Path(), []byte(line(1, Started)+line(2, Started)), 0o600)
	if _, err = OpenAppend(dir, "r", SyncBackground); !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned journal: err = %v, want ErrUnsigned", err)
	}
	if locked, _ := Locked(dir, "r"); locked {
		t.Error("a refused OpenAppend left the run locked")
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRunID(t *testing.T) {
	re := regexp.MustCompile(`^20261202T133000Z-[0-9a-f]{8}$`)
	a := NewRunID(t0, bytes.NewReader([]byte{0x4f, 0x3a, 0x9c, 0x1b}))
	if a != "20261202T133000Z-4f3a9c1b" {
		t.Errorf("NewRunID = %q", a)
	}
	b := NewRunID(t0, bytes.NewReader([]byte{1, 2, 3, 4}))
	if a == b {
		t.Error("different random bits gave the same id")
	}
	failing := NewRunID(t0.Add(123), errReader{})
	if !re.MatchString(failing) || failing == NewRunID(t0.Add(456), errReader{}) {
		t.Errorf("without randomness: %q", failing)
	}
	later := NewRunID(t0.Add(time.Second), bytes.NewReader([]byte{0, 0, 0, 0}))
	if later <= a {
		t.Errorf("%q does not sort after %q", later, a)
	}
	if inZone := NewRunID(t0.In(time.FixedZone("X", 3600)), bytes.NewReader([]byte{0x4f, 0x3a, 0x9c, 0x1b})); inZone != a {
		t.Errorf("ids depend on the time zone: %q", inZone)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestSaveLoadPlan(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{`{"format_version":1}`, `{"format_version":1,"source_hash":"b"}`} {
		if err := SavePlan(dir, "r", []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := LoadPlan(dir, "r")
		if err != nil || string(got) != content {
			t.Errorf("LoadPlan = %q, %v; want %q", got, err, content)
		}
	}
	ents, _ := os.ReadDir(RunDir(dir, "r"))
	if len(ents) != 1 || ents[0].Name() != PlanFileName {
		t.Errorf("run directory holds %v, want only %s", ents, PlanFileName)
	}
	if _, err := LoadPlan(dir, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadPlan of a missing run: %v", err)
	}
	if err := SavePlan(dir, "../x", nil); err == nil {
		t.Error("SavePlan accepted a path as run id")
	}
	// The journal may be created after the plan was saved.
	if _, err := Create(dir, "r", SyncBackground); err != nil {
		t.Errorf("Create after SavePlan: %v", err)
	}
}

func TestListRuns(t *testing.T) {
	dir := t.TempDir()
	if runs, err := ListRuns(dir); err != nil || len(runs) != 0 {
		t.Fatalf("empty state dir: %v, %v", runs, err)
	}
	write := func(id string, start time.Time, evs ...Event) {
		clock := start
		w, err := Create(dir, id, SyncBackground, WithClock(func() time.Time { clock = clock.Add(time.Second); return clock }))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := w.Append(ev); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
	}
	ev := func(typ string, it int, data any) Event {
		b, _ := json.Marshal(data)
		return Event{Agent: "agent.a", Iteration: it, Type: typ, Data: b}
	}
	write("old", t0,
		ev(Started, 0, StartedData{Input: "q"}),
		ev(ReasoningComplete, 1, ReasoningCompleteData{}),
		ev(Terminated, 1, TerminatedData{Reason: "budget_exceeded", Limit: "max_total_tokens", Iterations: 1, Usage: budget.Amount{ModelCalls: 1, TotalTokens: 900}}))
	write("mid", t0.Add(time.Hour),
		ev(Started, 0, StartedData{}),
		ev(ReasoningComplete, 1, ReasoningCompleteData{Usage: providerUsage(10, 5, 0), CostUSD: 0.5}),
		ev(ToolResult, 1, ToolResultData{}),
		ev(ReasoningComplete, 2, ReasoningCompleteData{Usage: providerUsage(20, 5, 30)}))
	write("new", t0.Add(2*time.Hour), ev(Started, 0, nil))
	os.WriteFile(Path(dir, "new"), []byte("{broken}\n"), 0o600)
	os.MkdirAll(RunDir(dir, "planonly"), 0o700)

	runs, err := ListRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	// The unreadable run has no start time and sorts last.
	if diff := cmp.Diff([]string{"mid", "old", "new"}, ids); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	want := RunSummary{ID: "mid", Agent: "agent.a", Started: t0.Add(time.Hour + time.Second), Status: StatusIncomplete,
		Iterations: 2, Events: 4, LastSeq: 4,
		Usage: budget.Amount{ModelCalls: 2, ToolCalls: 1, PromptTokens: 30, CompletionTokens: 10, TotalTokens: 45, CostUSD: 0.5}}
	if diff := cmp.Diff(want, runs[0]); diff != "" {
		t.Errorf("incomplete run (-want +got):\n%s", diff)
	}
	old := runs[1]
	if old.Status != "budget_exceeded" || old.Limit != "max_total_tokens" || old.Usage.TotalTokens != 900 || !old.Finished.Equal(t0.Add(3*time.Second)) {
		t.Errorf("terminated run: %+v", old)
	}
	if runs[2].Status != StatusUnreadable || !strings.Contains(runs[2].Error, "line 1") {
		t.Errorf("broken run: %+v", runs[2])
	}
}

func TestEventTypesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range EventTypes() {
		if seen[typ] || typ == "" {
			t.Errorf("event type %q repeated or empty", typ)
		}
		seen[typ] = true
	}
	if len(seen) != 28 {
		t.Errorf("%d event types, want 28", len(seen))
	}
	doc, err := os.ReadFile("../docs/journal.md")
	if err != nil {
		t.Skip("docs/journal.md not present")
	}
	for typ := range seen {
		if !strings.Contains(string(doc), "### "+typ) {
			t.Errorf("docs/journal.md does not document %s", typ)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(line(1, Started) + line(2, Terminated)))
	f.Add([]byte(line(1, Started) + `{"seq":2,"ts":`))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"seq":1,"ts":"2026-12-02T13:30:00Z","event":"x","data":null}` + "\n"))
	f.Add([]byte(`{"seq":1,"ts":"2026-12-02T13:30:00Z","event":"x","iteration":-1}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		evs, err := readAll(r)
		for i, ev := range evs {
			if ev.Seq != int64(i+1) || ev.Type == "" {
				t.Fatalf("event %d accepted: %+v", i, ev)
			}
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line != len(evs)+1 {
				t.Fatalf("error %v does not name line %d", err, len(evs)+1)
			}
			return
		}
		if r.Offset() > int64(len(in)) || (r.Torn() != (r.Offset() < int64(len(in)))) {
			t.Fatalf("offset %d of %d, torn %v", r.Offset(), len(in), r.Torn())
		}
		// Summaries of anything readable must not panic either.
		Summarize(evs)
	})
}

func readAll(r *Reader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func line(seq int64, typ string) string {
	b, _ := json.Marshal(Event{Seq: seq, Time: t0, RunID: "r", Type: typ})
	return string(b) + "\n"
}
