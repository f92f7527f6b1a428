package planexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	text := "Here is the plan:\n```json\n{\"steps\":[{\"id\":\"s1\",\"task\":\"find a\"},{\"id\":\"s2\",\"description\":\"use a\",\"depends_on\":[\"s1\"]}]}\n```"
	steps, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{ID: "s1", Task: "find a"}, {ID: "s2", Task: "use a", DependsOn: []string{"s1"}}}
	if len(steps) != 2 || steps[0].ID != want[0].ID || steps[1].Task != want[1].Task || !slices.Equal(steps[1].DependsOn, want[1].DependsOn) {
		t.Fatalf("steps = %+v", steps)
	}
	for _, bad := range []string{"no json here", `{"steps": 3}`, `{"steps":[{"id":1}]}`} {
		var pe *Error
		if _, err := Parse(bad); !errors.As(err, &pe) || pe.Kind != KindInvalid {
			t.Errorf("Parse(%q) err = %v, want invalid_plan", bad, err)
		}
	}
}

func TestValidate(t *testing.T) {
	st := func(id string, deps ...string) Step { return Step{ID: id, Task: "do " + id, DependsOn: deps} }
	tests := []struct {
		name  string
		steps []Step
		done  map[string]bool
		max   int
		kind  string
		extra string
	}{
		{name: "ok", steps: []Step{st("a"), st("b", "a"), st("c", "a", "b")}},
		{name: "empty", kind: KindEmpty},
		{name: "too many", steps: []Step{st("a"), st("b"), st("c")}, max: 2, kind: KindTooManySteps},
		{name: "duplicate", steps: []Step{st("a"), st("a")}, kind: KindDuplicateStep},
		{name: "reuses a finished id", steps: []Step{st("a")}, done: map[string]bool{"a": true}, kind: KindDuplicateStep},
		{name: "missing task", steps: []Step{{ID: "a"}}, kind: KindMissingID},
		{name: "unknown dependency", steps: []Step{st("a", "zz")}, kind: KindUnknownDependency},
		{name: "dependency finished earlier", steps: []Step{st("b", "a")}, done: map[string]bool{"a": true}},
		{name: "self cycle", steps: []Step{st("a", "a")}, kind: KindCycle, extra: "a -> a"},
		{name: "long cycle", steps: []Step{st("x"), st("a", "c"), st("b", "a"), st("c", "b")}, kind: KindCycle, extra: "a -> c -> b -> a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.steps, tt.done, tt.max)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Fatalf("err = %v, want kind %s", err, tt.kind)
			}
			if !strings.Contains(pe.Error(), tt.extra) {
				t.Errorf("error %q does not mention %q", pe.Error(), tt.extra)
			}
		})
	}
}

// recordingScheduler runs steps through fn and records the order of events.
type recordingScheduler struct {
	mu      sync.Mutex
	events  []string
	active  int
	maxSeen int
}

func (rs *recordingScheduler) scheduler(parallel int, cont bool, fn func(ctx context.Context, s Step, deps []Result) (string, error)) *Scheduler {
	return &Scheduler{
		Parallel:             parallel,
		ContinueAfterFailure: cont,
		Before:               func(s Step) error { return nil },
		Run: func(ctx context.Context, s Step, deps []Result) (string, error) {
			rs.mu.Lock()
			rs.active++
			rs.maxSeen = max(rs.maxSeen, rs.active)
			rs.mu.Unlock()
			defer func() {
				rs.mu.Lock()
				rs.active--
				rs.mu.Unlock()
			}()
			return fn(ctx, s, deps)
		},
		After: func(r Result) {
			rs.mu.Lock()
			rs.events = append(rs.events, r.ID+":"+r.Status)
			rs.mu.Unlock()
		},
		Now: time.Now,
	}
}

func TestSchedulerDependenciesAndParallelism(t *testing.T) {
	// a, b, c are independent; d needs a and b; e needs d. With parallel 2,
	// at most two run at once, and d sees the outputs of a and b.
	steps := []Step{
		{ID: "a", Task: "A"}, {ID: "b", Task: "B"}, {ID: "c", Task: "C"},
		{ID: "d", Task: "D", DependsOn: []string{"a", "b"}},
		{ID: "e", Task: "E", DependsOn: []string{"d"}},
	}
	gate := make(chan struct{})
	var once sync.Once
	rs := &recordingScheduler{}
	var mu sync.Mutex
	var dOutputs []string
	sc := rs.scheduler(2, false, func(ctx context.Context, s Step, deps []Result) (string, error) {
		if s.ID == "a" || s.ID == "b" {
			// Hold the first two steps until both are running, proving they overlap.
			rs.mu.Lock()
			both := rs.active == 2
			rs.mu.Unlock()
			if both {
				once.Do(func() { close(gate) })
			}
			select {
			case <-gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if s.ID == "d" {
			mu.Lock()
			for _, d := range deps {
				dOutputs = append(dOutputs, d.ID+"="+d.Output)
			}
			mu.Unlock()
		}
		return "out-" + s.ID, nil
	})
	results := map[string]Result{}
	if err := sc.Execute(context.Background(), steps, results); err != nil {
		t.Fatal(err)
	}
	if rs.maxSeen != 2 {
		t.Errorf("max concurrent steps = %d, want 2", rs.maxSeen)
	}
	if len(results) != 5 {
		t.Fatalf("results = %v", results)
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if results[id].Status != Done || results[id].Output != "out-"+id {
			t.Errorf("step %s = %+v", id, results[id])
		}
	}
	slices.Sort(dOutputs)
	if !slices.Equal(dOutputs, []string{"a=out-a", "b=out-b"}) {
		t.Errorf("d saw %v", dOutputs)
	}
	pos := func(ev string) int { return slices.Index(rs.events, ev) }
	if !(pos("d:done") > pos("a:done") && pos("d:done") > pos("b:done") && pos("e:done") > pos("d:done")) {
		t.Errorf("order of completion %v breaks dependencies", rs.events)
	}
}

func TestSchedulerFailureStops(t *testing.T) {
	steps := []Step{{ID: "a", Task: "A"}, {ID: "b", Task: "B", DependsOn: []string{"a"}}, {ID: "c", Task: "C", DependsOn: []string{"b"}}}
	rs := &recordingScheduler{}
	boom := errors.New("boom")
	sc := rs.scheduler(1, false, func(ctx context.Context, s Step, deps []Result) (string, error) {
		if s.ID == "b" {
			return "", boom
		}
		return "ok", nil
	})
	results := map[string]Result{}
	err := sc.Execute(context.Background(), steps, results)
	var sf *StepFailedError
	if !errors.As(err, &sf) || sf.Step != "b" || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want step b failed with boom", err)
	}
	if _, ran := results["c"]; ran {
		t.Errorf("step c ran after b failed: %v", results["c"])
	}
}

func TestSchedulerContinueAfterFailureSkipsDependents(t *testing.T) {
	steps := []Step{
		{ID: "a", Task: "A"}, {ID: "b", Task: "B", DependsOn: []string{"a"}},
		{ID: "c", Task: "C", DependsOn: []string{"b"}}, {ID: "d", Task: "D"},
	}
	rs := &recordingScheduler{}
	sc := rs.scheduler(1, true, func(ctx context.Context, s Step, deps []Result) (string, error) {
		if s.ID == "a" {
			return "", errors.New("a broke")
		}
		return "ok", nil
	})
	results := map[string]Result{}
	if err := sc.Execute(context.Background(), steps, results); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": Failed, "b": Skipped, "c": Skipped, "d": Done}
	for id, status := range want {
		if results[id].Status != status {
			t.Errorf("step %s: %s, want %s", id, results[id].Status, status)
		}
	}
	if len(rs.events) != 4 {
		t.Errorf("after() saw %v, want every step once", rs.events)
	}
}

func TestSchedulerStepTimeout(t *testing.T) {
	steps := []Step{{ID: "slow", Task: "wait"}}
	rs := &recordingScheduler{}
	sc := rs.scheduler(1, false, func(ctx context.Context, s Step, deps []Result) (string, error) {
		<-ctx.Done() // a step that only ends when its deadline passes
		return "", ctx.Err()
	})
	sc.StepTimeout = time.Millisecond
	err := sc.Execute(context.Background(), steps, map[string]Result{})
	if !errors.Is(err, ErrStepTimeout) {
		t.Fatalf("err = %v, want ErrStepTimeout", err)
	}
}

func TestSchedulerBeforeErrorStopsAndWaits(t *testing.T) {
	steps := []Step{{ID: "a", Task: "A"}, {ID: "b", Task: "B"}, {ID: "c", Task: "C"}}
	rs := &recordingScheduler{}
	limit := errors.New("max_plan_steps")
	n := 0
	sc := rs.scheduler(3, false, func(ctx context.Context, s Step, deps []Result) (string, error) { return "ok", nil })
	sc.Before = func(s Step) error {
		n++
		if n > 2 {
			return limit
		}
		return nil
	}
	results := map[string]Result{}
	if err := sc.Execute(context.Background(), steps, results); !errors.Is(err, limit) {
		t.Fatalf("err = %v, want the before error", err)
	}
	if results["a"].Status != Done || results["b"].Status != Done {
		t.Errorf("the steps already started were not waited for: %v", results)
	}
	if _, ok := results["c"]; ok {
		t.Errorf("step c ran past the limit")
	}
}

func TestSchedulerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	steps := []Step{{ID: "a", Task: "A"}, {ID: "b", Task: "B", DependsOn: []string{"a"}}}
	rs := &recordingScheduler{}
	sc := rs.scheduler(1, true, func(ctx context.Context, s Step, deps []Result) (string, error) {
		cancel()
		<-ctx.Done()
		return "", fmt.Errorf("step %s: %w", s.ID, ctx.Err())
	})
	if err := sc.Execute(ctx, steps, map[string]Result{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestSchedulerStopErrorOverridesContinue(t *testing.T) {
	steps := []Step{{ID: "a", Task: "A"}, {ID: "b", Task: "B", DependsOn: []string{"a"}}}
	rs := &recordingScheduler{}
	exhausted := errors.New("max_total_tokens")
	sc := rs.scheduler(1, true, func(ctx context.Context, s Step, deps []Result) (string, error) {
		return "", &StopError{Err: exhausted}
	})
	results := map[string]Result{}
	if err := sc.Execute(context.Background(), steps, results); err != exhausted {
		t.Fatalf("err = %v, want the budget error itself", err)
	}
	if _, ok := results["b"]; ok {
		t.Errorf("step b was scheduled after the plan had to stop")
	}
}
