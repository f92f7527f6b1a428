package temporal

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/client"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
	"github.com/symbi-dev/symbi/temporal/contract"
)

// The numbers of docs/benchmarks.md ("symbi on Temporal"), against a real
// Temporal service (the dev server: scripts/temporal.sh builds it):
//
//	SYMBI_TEMPORAL_ADDRESS=127.0.0.1:7233 go test ./temporal -run '^$' -bench Temporal -benchtime 5x
//
// Without SYMBI_TEMPORAL_ADDRESS they skip.

// counting answers each turn with a calculator call k+1 until the last
// tool result is last, then with the text "counted to last".
func counting(last int) func(n int, req fakeserver.Request) fakeserver.Reply {
	return func(_ int, req fakeserver.Request) fakeserver.Reply {
		k := lastToolResult(req.Chat.Messages)
		if k >= last {
			return fakeserver.Text("counted to ", strconv.Itoa(k))
		}
		return fakeserver.Reply{
			ToolCalls: []fakeserver.ToolCall{{ID: "c" + strconv.Itoa(k), Name: "calculator", Arguments: fmt.Sprintf(`{"expression":"%d+1"}`, k)}},
			Usage:     &provider.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60},
		}
	}
}

func lastToolResult(msgs []goopenai.ChatCompletionMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			k, _ := strconv.Atoi(msgs[i].Content)
			return k
		}
	}
	return 0
}

// benchAgent is a react agent on the fake server that counts to rounds
// with the calculator.
func benchAgent(url string, rounds int) string {
	return fmt.Sprintf(`
model "m" {
  provider = "openai"
  name     = "fake-model"
  base_url = %q
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
budget "b" {
  max_iterations   = %d
  max_total_tokens = 0
}
agent "a" {
  model    = model.m
  tools    = [tool.calculator]
  policies = [policy.rules]
  budget   = budget.b
  loop {
    mode = "react"
  }
}
`, url, rounds+1)
}

func benchService(b *testing.B) string {
	addr := os.Getenv("SYMBI_TEMPORAL_ADDRESS")
	if addr == "" {
		b.Skip("no Temporal service: set SYMBI_TEMPORAL_ADDRESS (scripts/temporal.sh builds the dev server)")
	}
	return addr
}

// benchWorker starts a worker of its own connection on queue.
func benchWorker(b *testing.B, addr, dir, queue string) client.Client {
	cl, err := Connection{Address: addr}.Dial(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	w, acts := NewWorker(cl, WorkerOptions{BaseDir: dir, TaskQueue: queue})
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Stop(); acts.Close(); cl.Close() })
	return cl
}

// startAndWait runs one workflow to its end.
func startAndWait(b *testing.B, cl client.Client, id, queue string, in contract.Start) contract.Output {
	ctx := context.Background()
	if err := (&Client{C: cl}).Start(ctx, id, queue, in); err != nil {
		b.Fatal(err)
	}
	var out contract.Output
	if err := cl.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkTemporalReact100 runs the same 100-round run on the local
// engine and as a workflow, alternately, and reports the median ratio
// (temporal/local), the Temporal path's added time per activity (101
// model calls and 100 tool calls), and the history events per iteration.
func BenchmarkTemporalReact100(b *testing.B) {
	const rounds = 100
	addr := benchService(b)
	srv := fakeserver.New(b, fakeserver.WithHandler(counting(rounds)), fakeserver.WithoutHistory())
	p, dir := compile(b, files(b, map[string]string{"main.hcl": benchAgent(srv.URL(), rounds)}))
	queue := "bench-react-" + time.Now().Format("150405.000000")
	cl := benchWorker(b, addr, dir, queue)
	e, err := engine.New(p, engine.Options{BaseDir: dir, StateDir: b.TempDir(), LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	in, err := contract.NewStart(p, dir, "a", "count")
	if err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf("counted to %d", rounds)
	runLocal := func() time.Duration {
		t0 := time.Now()
		res, err := e.Run(context.Background(), "a", "count", engine.RunOptions{})
		if err != nil || res.Answer != want {
			b.Fatalf("local: %v %q", err, res.Answer)
		}
		return time.Since(t0)
	}
	n := 0
	runTemporal := func() (time.Duration, string) {
		n++
		id := fmt.Sprintf("%s-%d", queue, n)
		t0 := time.Now()
		out := startAndWait(b, cl, id, queue, in)
		if out.Answer != want {
			b.Fatalf("temporal: %q %+v", out.Answer, out.Termination)
		}
		return time.Since(t0), id
	}
	runLocal()
	runTemporal()
	var ratios, added []float64
	var last string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := runLocal()
		t, id := runTemporal()
		last = id
		ratios = append(ratios, float64(t)/float64(l))
		added = append(added, float64(t-l)/float64(time.Millisecond)/(2*rounds+1))
	}
	b.StopTimer()
	slices.Sort(ratios)
	slices.Sort(added)
	b.ReportMetric(ratios[len(ratios)/2], "temporal/local")
	b.ReportMetric(added[len(added)/2], "ms-added/activity")
	events := 0
	it := cl.GetWorkflowHistory(context.Background(), last, "", false, 0)
	for it.HasNext() {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		events++
	}
	b.ReportMetric(float64(events)/(rounds+1), "history-events/iteration")
}

// BenchmarkTemporalThroughput completes 20 runs of 5 rounds at once, on a
// model that takes 20 ms a turn, with 1 and with 2 workers (each with its
// own connection), and reports the runs completed per second.
func BenchmarkTemporalThroughput(b *testing.B) {
	const rounds, runs = 5, 20
	addr := benchService(b)
	srv := fakeserver.New(b, fakeserver.WithHandler(counting(rounds)), fakeserver.WithoutHistory(), fakeserver.WithLatency(20*time.Millisecond))
	p, dir := compile(b, files(b, map[string]string{"main.hcl": benchAgent(srv.URL(), rounds)}))
	in, err := contract.NewStart(p, dir, "a", "count")
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			queue := fmt.Sprintf("bench-tp%d-%s", workers, time.Now().Format("150405.000000"))
			var cl client.Client
			for range workers {
				cl = benchWorker(b, addr, dir, queue)
			}
			startAndWait(b, cl, queue+"-warm", queue, in)
			b.ResetTimer()
			t0 := time.Now()
			for i := 0; i < b.N; i++ {
				errs := make(chan error, runs)
				for k := range runs {
					go func() {
						ctx := context.Background()
						id := fmt.Sprintf("%s-%d-%d", queue, i, k)
						if err := (&Client{C: cl}).Start(ctx, id, queue, in); err != nil {
							errs <- err
							return
						}
						var out contract.Output
						err := cl.GetWorkflow(ctx, id, "").Get(ctx, &out)
						if err == nil && out.Termination.Reason != "completed" {
							err = fmt.Errorf("%s: %+v", id, out.Termination)
						}
						errs <- err
					}()
				}
				for range runs {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(runs*b.N)/time.Since(t0).Seconds(), "runs/s")
		})
	}
}

// delegating answers a lead (offered the delegate tool) with one
// delegation to worker, then with the worker's answer; the worker answers
// at once.
func delegating(_ int, req fakeserver.Request) fakeserver.Reply {
	msgs := req.Chat.Messages
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		return fakeserver.Text("The worker says ", msgs[len(msgs)-1].Content)
	}
	for _, t := range req.Chat.Tools {
		if t.Function != nil && t.Function.Name == "delegate" {
			return fakeserver.Reply{ToolCalls: []fakeserver.ToolCall{{ID: "d1", Name: "delegate", Arguments: `{"target":"worker","task":"What is 6 * 7?"}`}}}
		}
	}
	return fakeserver.Text("42")
}

// BenchmarkTemporalDelegation runs a lead that delegates once on the local
// engine and as a workflow whose delegation is a child workflow,
// alternately, and reports the median ratio (temporal/local), the
// Temporal run's time, and the history events of the run and of its
// delegation's child workflow.
func BenchmarkTemporalDelegation(b *testing.B) {
	addr := benchService(b)
	srv := fakeserver.New(b, fakeserver.WithHandler(delegating), fakeserver.WithoutHistory())
	p, dir := compile(b, files(b, map[string]string{"main.hcl": fmt.Sprintf(`
model "m" {
  provider = "openai"
  name     = "fake-model"
  base_url = %q
}
policy "rules" {
  rules {
    allow = ["delegate"]
  }
}
agent "lead" {
  model     = model.m
  delegates = [agent.worker]
  policies  = [policy.rules]
}
agent "worker" {
  model = model.m
}
`, srv.URL())}))
	queue := "bench-delegation-" + time.Now().Format("150405.000000")
	cl := benchWorker(b, addr, dir, queue)
	e, err := engine.New(p, engine.Options{BaseDir: dir, StateDir: b.TempDir(), LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	in, err := contract.NewStart(p, dir, "lead", "ask the worker")
	if err != nil {
		b.Fatal(err)
	}
	const want = "The worker says 42"
	runLocal := func() time.Duration {
		t0 := time.Now()
		res, err := e.Run(context.Background(), "lead", "ask the worker", engine.RunOptions{})
		if err != nil || res.Answer != want {
			b.Fatalf("local: %v %q", err, res.Answer)
		}
		return time.Since(t0)
	}
	n := 0
	runTemporal := func() (time.Duration, string) {
		n++
		id := fmt.Sprintf("%s-%d", queue, n)
		t0 := time.Now()
		out := startAndWait(b, cl, id, queue, in)
		if out.Answer != want {
			b.Fatalf("temporal: %q %+v", out.Answer, out.Termination)
		}
		return time.Since(t0), id
	}
	runLocal()
	runTemporal()
	var ratios, took []float64
	var last string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l := runLocal()
		t, id := runTemporal()
		last = id
		ratios = append(ratios, float64(t)/float64(l))
		took = append(took, float64(t)/float64(time.Millisecond))
	}
	b.StopTimer()
	slices.Sort(ratios)
	slices.Sort(took)
	b.ReportMetric(ratios[len(ratios)/2], "temporal/local")
	b.ReportMetric(took[len(took)/2], "ms/temporal-run")
	count := func(id string) float64 {
		events := 0
		it := cl.GetWorkflowHistory(context.Background(), id, "", false, 0)
		for it.HasNext() {
			if _, err := it.Next(); err != nil {
				b.Fatal(err)
			}
			events++
		}
		return float64(events)
	}
	b.ReportMetric(count(last), "history-events/run")
	b.ReportMetric(count(last+".d1"), "history-events/delegation")
}
