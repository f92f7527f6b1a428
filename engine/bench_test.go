package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/fakeserver"
)

// counting answers like a model that counts with the calculator: a tool
// call "k+1" after the tool result k, and a final answer once k reaches
// last.
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

// benchHCL is the benchmark agent on the fake server: no retries, a budget
// that does not stop 100 iterations, and the default context strategy.
func benchHCL(url string, iterations int) string {
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
`, url, iterations+1)
}

// bareLoop makes the same calls as the engine's react run, straight
// through go-openai: stream each turn, assemble the tool call, answer it
// (k+1, computed inline), append, repeat. It is the baseline the engine's
// overhead is measured against. With a bodyKeeper (the client's
// transport), it also reads each response body to its end after [DONE],
// as the engine's provider does, so it reuses its connection every time.
func bareLoop(ctx context.Context, client *goopenai.Client, tools []goopenai.Tool, input string, keeper *bodyKeeper) (string, error) {
	msgs := []goopenai.ChatCompletionMessage{{Role: "user", Content: input}}
	for {
		stream, err := client.CreateChatCompletionStream(ctx, goopenai.ChatCompletionRequest{
			Model: "fake-model", Messages: msgs, Tools: tools, Stream: true,
			StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
		})
		if err != nil {
			return "", err
		}
		var content strings.Builder
		var call goopenai.ToolCall
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				stream.Close()
				return "", err
			}
			for _, c := range chunk.Choices {
				content.WriteString(c.Delta.Content)
				for _, tc := range c.Delta.ToolCalls {
					if tc.ID != "" {
						call.ID, call.Type = tc.ID, tc.Type
					}
					call.Function.Name += tc.Function.Name
					call.Function.Arguments += tc.Function.Arguments
				}
			}
		}
		if keeper != nil {
			_, _ = io.Copy(io.Discard, keeper.last)
		}
		stream.Close()
		if call.ID == "" {
			return content.String(), nil
		}
		expr := strings.TrimSuffix(strings.TrimPrefix(call.Function.Arguments, `{"expression":"`), `"}`)
		a, _ := strconv.Atoi(strings.TrimSuffix(expr, "+1"))
		msgs = append(msgs,
			goopenai.ChatCompletionMessage{Role: "assistant", ToolCalls: []goopenai.ToolCall{call}},
			goopenai.ChatCompletionMessage{Role: "tool", ToolCallID: call.ID, Content: strconv.Itoa(a + 1)})
	}
}

// bodyKeeper is a transport that remembers the last response body.
type bodyKeeper struct {
	base http.RoundTripper
	last io.Reader
}

func (k *bodyKeeper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := k.base.RoundTrip(req)
	if err == nil {
		k.last = resp.Body
	}
	return resp, err
}

func bareClient(url string, transport http.RoundTripper) *goopenai.Client {
	cfg := goopenai.DefaultConfig("")
	cfg.BaseURL = url
	cfg.HTTPClient = &http.Client{Transport: transport}
	return goopenai.NewClientWithConfig(cfg)
}

// BenchmarkReactLoop100 runs a 100-iteration react run against the local
// fake server and, in the same run, the bare go-openai loop over the same
// calls; it reports the times per run and their ratio (the engine's
// overhead: gate, journal, dispatch, budget, context fitting). go-openai
// stops reading a stream at [DONE], which often closes the connection
// (the chunked terminator arrives a moment later), and the engine's
// provider does not; so a second baseline, the bare loop that also reads
// each body to its end, is timed too (engine/bare-drained): the engine's
// overhead with connection reuse taken out of the comparison.
//
//	go test -run '^$' -bench ReactLoop100 -benchtime 20x ./engine/
func BenchmarkReactLoop100(b *testing.B) {
	const iterations = 100
	srv := fakeserver.New(b, fakeserver.WithHandler(counting(iterations)), fakeserver.WithoutHistory())
	p, dir := fixture{"main.hcl": benchHCL(srv.URL(), iterations)}.compile(b)
	e, err := New(p, Options{BaseDir: dir, StateDir: b.TempDir(), LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	client := bareClient(srv.URL(), http.DefaultTransport.(*http.Transport).Clone())
	keeper := &bodyKeeper{base: http.DefaultTransport.(*http.Transport).Clone()}
	drainedClient := bareClient(srv.URL(), keeper)
	at, err := e.agentTools(context.Background(), e.Plan().Agent("agent.a"))
	if err != nil {
		b.Fatal(err)
	}
	var tools []goopenai.Tool
	for _, s := range at.specs {
		tools = append(tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{Name: s.Name, Description: s.Description, Parameters: s.Parameters}})
	}
	want := fmt.Sprintf("counted to %d", iterations)
	ctx := context.Background()
	// Warm both paths (connections, policy, toolbox) outside the timing.
	if res := mustRun(b, e, "a", "count", RunOptions{}); res.Answer != want {
		b.Fatalf("engine: %s %q", res.Termination, res.Answer)
	}
	if got, err := bareLoop(ctx, client, tools, "count", nil); err != nil || got != want {
		b.Fatalf("bare: %q %v", got, err)
	}
	if got, err := bareLoop(ctx, drainedClient, tools, "count", keeper); err != nil || got != want {
		b.Fatalf("bare, drained: %q %v", got, err)
	}
	// Runs alternate, and the figure is the median of the per-triple
	// ratios, so that a burst of load from other processes on a shared
	// machine skews one triple rather than the result.
	engineTimes := make([]time.Duration, 0, b.N)
	bareTimes := make([]time.Duration, 0, b.N)
	drainedTimes := make([]time.Duration, 0, b.N)
	ratios := make([]float64, 0, b.N)
	drainedRatios := make([]float64, 0, b.N)
	b.ResetTimer()
	engine := func() time.Duration {
		start := time.Now()
		res, err := e.Run(ctx, "a", "count", RunOptions{})
		et := time.Since(start)
		if err != nil || res.Answer != want {
			b.Fatalf("engine: %v %s", err, res.Termination)
		}
		return et
	}
	bare := func(client *goopenai.Client, keeper *bodyKeeper) time.Duration {
		start := time.Now()
		got, err := bareLoop(ctx, client, tools, "count", keeper)
		bt := time.Since(start)
		if err != nil || got != want {
			b.Fatalf("bare: %q %v", got, err)
		}
		return bt
	}
	for i := 0; i < b.N; i++ {
		// Each of the three goes first, second and third in turn, so none
		// always pays for the garbage or the background journal sync
		// another left behind.
		var et, bt, dt time.Duration
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				et = engine()
			case 1:
				bt = bare(client, nil)
			case 2:
				dt = bare(drainedClient, keeper)
			}
		}
		engineTimes, bareTimes, drainedTimes = append(engineTimes, et), append(bareTimes, bt), append(drainedTimes, dt)
		ratios = append(ratios, float64(et)/float64(bt))
		drainedRatios = append(drainedRatios, float64(et)/float64(dt))
	}
	b.StopTimer()
	b.ReportMetric(float64(median(engineTimes).Microseconds())/1000, "engine-ms/run")
	b.ReportMetric(float64(median(bareTimes).Microseconds())/1000, "bare-ms/run")
	b.ReportMetric(float64(median(drainedTimes).Microseconds())/1000, "bare-drained-ms/run")
	b.ReportMetric(median(ratios), "engine/bare")
	b.ReportMetric(median(drainedRatios), "engine/bare-drained")
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// loopModel is an in-memory model that counts with the calculator like
// counting, for measuring the engine's own memory: unlike the fake server
// and the scripted model, it keeps no record of the requests it saw.
type loopModel struct{ last int }

func (m loopModel) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event)) (provider.Response, error) {
	k := 0
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == provider.ToolRole {
			k, _ = strconv.Atoi(req.Messages[i].Content)
			break
		}
	}
	usage := provider.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60}
	if k >= m.last {
		onEvent(provider.Event{ContentDelta: "done"})
		return provider.Response{Content: "done", Usage: usage, UsageKnown: true}, nil
	}
	return provider.Response{
		ToolCalls: []provider.ToolCall{{ID: "c" + strconv.Itoa(k), Name: "calculator", Arguments: fmt.Sprintf(`{"expression":"%d+1"}`, k)}},
		Usage:     usage, UsageKnown: true,
	}, nil
}

// BenchmarkMemory1000 runs 1,000 iterations and reports the heap in use
// after iteration 100 and after iteration 1,000, and their ratio: with a
// context strategy the run holds a bounded conversation, so the ratio
// stays near 1.
//
//	go test -run '^$' -bench Memory1000 -benchtime 1x ./engine/
func BenchmarkMemory1000(b *testing.B) {
	const iterations = 1000
	p, dir := fixture{"main.hcl": benchHCL("http://127.0.0.1:1/v1", iterations)}.compile(b)
	a := p.Agent("agent.a")
	a.Context = plan.ContextSettings{Strategy: "sliding_window", TokenBudget: 4000, Recent: 6}
	var at100, at1000 uint64
	var ms runtime.MemStats
	e, err := New(p, Options{
		BaseDir: dir, StateDir: b.TempDir(),
		Models: map[string]provider.Model{"model.m": loopModel{last: iterations}},
		OnEvent: func(ev Event) {
			if ev.Type != journal.ObservationsCollected || (ev.Iteration != 100 && ev.Iteration != iterations) {
				return
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			if ev.Iteration == 100 {
				at100 = ms.HeapInuse
			} else {
				at1000 = ms.HeapInuse
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Run(context.Background(), "a", "count", RunOptions{})
		if err != nil || res.Termination.Reason != Completed {
			b.Fatalf("%v %s", err, res.Termination)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(at100)/(1<<20), "heap-MiB@100")
	b.ReportMetric(float64(at1000)/(1<<20), "heap-MiB@1000")
	b.ReportMetric(float64(at1000)/float64(at100), "heap1000/heap100")
}

// BenchmarkReactInMemory100 is the engine's own cost per iteration, with
// no HTTP: the 100-iteration react run of BenchmarkReactLoop100 (journal,
// rules policy, schema validation, toolbox, budget, context fitting) on
// the in-memory model. On a loaded machine it moves far less than the
// engine/bare ratio, so it is the figure to compare changes to the loop by.
//
//	go test -run '^$' -bench ReactInMemory100 -benchmem ./engine/
func BenchmarkReactInMemory100(b *testing.B) {
	benchReactInMemory(b, benchHCL("http://127.0.0.1:1/v1", 100), nil)
}

// BenchmarkReactInMemory100Secrets is BenchmarkReactInMemory100 with an
// API key registered, so the redactor looks at every journal line, event
// and model request (none of which holds the key).
//
//	go test -run '^$' -bench ReactInMemory100Secrets -benchmem ./engine/
func BenchmarkReactInMemory100Secrets(b *testing.B) {
	hcl := strings.Replace(benchHCL("http://127.0.0.1:1/v1", 100), `name     = "fake-model"`, `name     = "fake-model"
  api_key_env = "BENCH_KEY"`, 1)
	benchReactInMemory(b, hcl, func(n string) (string, bool) {
		if n == "BENCH_KEY" {
			return "sk-bench-5f8e2a91c4d7", true
		}
		return "", false
	})
}

func benchReactInMemory(b *testing.B, hcl string, lookupEnv func(string) (string, bool)) {
	const iterations = 100
	p, dir := fixture{"main.hcl": hcl}.compile(b)
	e, err := New(p, Options{
		BaseDir: dir, StateDir: b.TempDir(), LookupEnv: lookupEnv,
		Models: map[string]provider.Model{"model.m": loopModel{last: iterations}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	mustRun(b, e, "a", "count", RunOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Run(context.Background(), "a", "count", RunOptions{})
		if err != nil || res.Termination.Reason != Completed || res.Iterations != iterations+1 {
			b.Fatalf("%v %s after %d iterations", err, res.Termination, res.Iterations)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*(iterations+1)), "µs/iteration")
}
