package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/symbi-dev/symbi/provider/fakeserver"
)

const benchLatency = 50 * time.Millisecond

// BenchmarkBestOfN runs 8 candidates at concurrency 4 against the fake
// server answering every request after 50 ms: two waves of four, so the
// ideal is 2 × 50 ms. It reports the time per run against that ideal
// (x_ideal) and against a baseline measured in the same run (x_baseline):
// the same 8 requests sent straight through go-openai, 4 at a time, with
// no engine in between.
//
//	go test ./engine/ -run '^$' -bench BestOfN -benchtime 20x
func BenchmarkBestOfN(b *testing.B) {
	srv := fakeserver.New(b, fakeserver.WithLatency(benchLatency), fakeserver.WithoutHistory(), fakeserver.WithHandler(func(int, fakeserver.Request) fakeserver.Reply {
		return fakeserver.Text("42")
	}))
	p, dir := fixture{"main.hcl": fmt.Sprintf(`
model "m" {
  provider = "openai"
  name     = "fake-model"
  base_url = %q
}
agent "solver" {
  model = model.m
  loop {
    mode = "simple"
  }
}
best_of_n "answer" {
  agent           = agent.solver
  candidates      = 8
  max_concurrency = 4
  vary {
    temperature = 0.1 * candidate.index
  }
  scorer {
    expr = 1
  }
  selector {
    kind = "majority_vote"
  }
}
`, srv.URL())}.compile(b)
	e, _ := newEngine(b, p, dir, func(o *Options) { o.OnEvent = nil })
	ctx := context.Background()

	// journal: as symbi run does it, ending with the journal's fsync at
	// termination; no_journal: the same run persisting nothing, which
	// separates the engine's own cost from the disk's.
	for _, variant := range []struct {
		name string
		ro   RunOptions
	}{{"journal", RunOptions{}}, {"no_journal", RunOptions{NoJournal: true}}} {
		b.Run(variant.name, func(b *testing.B) {
			baseline := benchBaseline(b, srv.URL()) // just before, under the same load
			run := func() {
				res, err := e.BestOfN(ctx, "answer", "What is 6 * 7?", variant.ro)
				if err != nil || res.Termination.Reason != Completed || res.Answer != "42" {
					b.Fatalf("best-of-N: %v %v %+v", err, res.Termination, res.Candidates)
				}
			}
			run() // warm the connection pool, as the baseline did
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				run()
			}
			per := time.Since(start) / time.Duration(b.N)
			b.StopTimer()
			b.ReportMetric(float64(per)/float64(2*benchLatency), "x_ideal")
			b.ReportMetric(float64(per)/float64(baseline), "x_baseline")
		})
	}
}

// benchBaseline is the time of 8 bare go-openai calls to the same server, 4
// at a time, averaged over a few rounds after a warm-up round.
func benchBaseline(b *testing.B, url string) time.Duration {
	cfg := goopenai.DefaultConfig("unused")
	cfg.BaseURL = url
	client := goopenai.NewClientWithConfig(cfg)
	round := func() {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				_, err := client.CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{
					Model:    "fake-model",
					Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "What is 6 * 7?"}},
				})
				if err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	round()
	const rounds = 5
	start := time.Now()
	for range rounds {
		round()
	}
	return time.Since(start) / rounds
}
