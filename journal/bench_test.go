package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/provider"
)

func providerUsage(p, c, t int64) provider.Usage {
	return provider.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: t}
}

// benchEvent is a typical reasoning_complete line (~400 bytes).
var benchData, _ = json.Marshal(ReasoningCompleteData{
	Model: "model.fast", Content: "I will look that up.",
	ToolCalls: []provider.ToolCall{{ID: "c1", Name: "web_search", Arguments: `{"query":"capital of France population 2026"}`}},
	Usage:     providerUsage(1200, 40, 1240), UsageKnown: true, DurationMS: 812,
})

// BenchmarkAppend compares the journal's Append in both sync modes with a
// bare os.File.Write of the same bytes: the ratios are what durability costs
// the loop (docs/benchmarks.md).
func BenchmarkAppend(b *testing.B) {
	ev := Event{Agent: "agent.researcher", Iteration: 3, Type: ReasoningComplete, Data: benchData}
	for _, mode := range []SyncMode{SyncBackground, SyncAlways} {
		b.Run(mode.String(), func(b *testing.B) {
			w, err := Create(b.TempDir(), "bench", mode)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Append(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("bare_write", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "j"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		line, _ := json.Marshal(Event{Seq: 1, RunID: "bench", Agent: ev.Agent, Iteration: 3, Type: ev.Type, Data: benchData})
		line = append(line, '\n')
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	w, _ := Create(dir, "r", SyncBackground)
	for range 1000 {
		w.Append(Event{Agent: "a", Type: ReasoningComplete, Data: benchData})
	}
	w.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadFile(w.Path()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendRatio interleaves one Append and one bare write of the
// same bytes per iteration and reports the ratio of their medians
// ("x-bare-write"): interleaving makes load from other processes on a
// shared machine hit both alike, and medians ignore its spikes.
func BenchmarkAppendRatio(b *testing.B) {
	ev := Event{Agent: "agent.researcher", Iteration: 3, Type: ReasoningComplete, Data: benchData}
	line, _ := json.Marshal(Event{Seq: 1, RunID: "bench", Agent: ev.Agent, Iteration: 3, Type: ev.Type, Data: benchData})
	line = append(line, '\n')
	for _, tc := range []struct {
		name string
		mode SyncMode
	}{
		{"background", SyncBackground},
		{"always", SyncAlways},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			w, err := Create(dir, "bench", tc.mode)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			f, err := os.OpenFile(filepath.Join(dir, "bare"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var appendT, writeT []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := w.Append(ev); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := f.Write(line); err != nil {
					b.Fatal(err)
				}
				appendT = append(appendT, t1.Sub(t0))
				writeT = append(writeT, time.Since(t1))
			}
			b.ReportMetric(float64(median(appendT))/float64(median(writeT)), "x-bare-write")
			b.ReportMetric(float64(median(appendT)), "p50-ns")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
