package journal

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/budget"
	"github.com/symbi-dev/symbi/provider"
)

// Summarize reports the usage reserved and not settled beside the usage:
// for a run without a terminated event, the model call it started and did
// not finish (in flight when the process died); for a finished one, what
// its terminated event says; a call that finished, or a new attempt that
// charged it, reserves nothing.
func TestSummarizeReportsTheReserved(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	var seq int64
	ev := func(typ string, data any) Event {
		seq++
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		return Event{Seq: seq, Time: at.Add(time.Duration(seq) * time.Second), RunID: "r", Agent: "agent.a", Type: typ, Data: b}
	}
	started := ev(Started, StartedData{Agent: "agent.a", Input: "x"})
	call := ev(ModelCallStarted, ModelCallStartedData{Model: "model.m", EstimatedPromptTokens: 100, EstimatedCompletionTokens: 512, EstimatedCostUSD: 0.0006})
	done := ev(ReasoningComplete, ReasoningCompleteData{Model: "model.m", Usage: usageOf(90, 20)})
	want := budget.Amount{ModelCalls: 1, PromptTokens: 100, CompletionTokens: 512, TotalTokens: 612, CostUSD: 0.0006}

	if s := Summarize([]Event{started, call}); s.Reserved != want || s.Usage.ModelCalls != 0 {
		t.Errorf("a call in flight: reserved %+v, usage %+v; want %+v reserved", s.Reserved, s.Usage, want)
	}
	if s := Summarize([]Event{started, call, done}); s.Reserved != (budget.Amount{}) || s.Usage.TotalTokens != 110 {
		t.Errorf("a finished call: reserved %+v, usage %+v", s.Reserved, s.Usage)
	}
	if s := Summarize([]Event{started, call, ev(Started, StartedData{Agent: "agent.a", Resume: 2})}); s.Reserved != (budget.Amount{}) {
		t.Errorf("charged by the resumed attempt: reserved %+v", s.Reserved)
	}
	held := budget.Amount{ModelCalls: 1, TotalTokens: 300}
	end := ev(Terminated, TerminatedData{Reason: "completed", Reserved: &held})
	if s := Summarize([]Event{started, call, end}); s.Reserved != held {
		t.Errorf("terminated: reserved %+v, want its %+v", s.Reserved, held)
	}
}

func usageOf(prompt, completion int64) provider.Usage {
	return provider.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}
