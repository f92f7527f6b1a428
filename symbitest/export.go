package symbitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
	"github.com/symbi-dev/symbi/provider/cassette"
)

// turn is one model turn a journal holds.
type turn struct {
	ev   journal.Event
	data reasoningData
}

// reasoningData is a reasoning_complete event as the engine writes it:
// the journal's fields and the assistant message, which carries the
// turn's extended thinking.
type reasoningData struct {
	journal.ReasoningCompleteData
	Message provider.Message `json:"message"`
}

// turns reads the model turns of run runID and of every run under it
// (delegations, evaluators, plan steps, judges: their ids extend the
// run's), in the order they happened. Every journal is verified first.
func turns(stateDir, runID string) ([]turn, error) {
	evs, err := journal.ReadRun(stateDir, runID)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].Type != journal.Started {
		return nil, fmt.Errorf("run %s: the journal does not start with a started event", runID)
	}
	var started journal.StartedData
	if err := evs[0].Decode(&started); err != nil {
		return nil, err
	}
	if started.BestOfN != "" {
		return nil, fmt.Errorf("run %s is a best-of-N run, whose candidates are not journalled: record its traffic with symbi run --record instead", runID)
	}
	if evs[len(evs)-1].Type != journal.Terminated {
		return nil, fmt.Errorf("run %s has not finished (its journal does not end with terminated): resume it, or export a finished run", runID)
	}
	all := [][]journal.Event{evs}
	runs, err := journal.ListRuns(stateDir)
	if err != nil {
		return nil, err
	}
	for _, sub := range runs {
		if strings.HasPrefix(sub.ID, runID+".") {
			subEvs, err := journal.ReadRun(stateDir, sub.ID)
			if err != nil {
				return nil, err
			}
			all = append(all, subEvs)
		}
	}
	var out []turn
	for _, list := range all {
		for _, ev := range list {
			if ev.Type != journal.ReasoningComplete {
				continue
			}
			var d reasoningData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			out = append(out, turn{ev: ev, data: d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ev.Time.Before(out[j].ev.Time) })
	if len(out) == 0 {
		return nil, fmt.Errorf("run %s made no model call", runID)
	}
	return out, nil
}

// ExportCassette is a finished run's model traffic as a cassette: one
// exchange per model turn of the run and the runs under it, in the order
// they happened. A journal keeps the conversation, not each request as it
// was sent, so the exchanges have no request: each matches any request to
// its model in its turn, until `symbi test -update` (or `symbi run
// --replay --record-missing`) writes in the requests the agent sends,
// without calling a model.
func ExportCassette(stateDir, runID string) (*cassette.Cassette, error) {
	ts, err := turns(stateDir, runID)
	if err != nil {
		return nil, err
	}
	c := cassette.New()
	for _, t := range ts {
		d := t.data
		resp := provider.Response{
			Content: d.Content, ToolCalls: d.ToolCalls, Reasoning: d.Reasoning, Usage: d.Usage, UsageKnown: d.UsageKnown,
			FinishReason: d.FinishReason, FinishReasonMissing: d.FinishReasonMissing, Thinking: d.Message.Thinking,
		}
		c.Exchanges = append(c.Exchanges, cassette.Exchange{Model: d.Model, Response: &resp})
	}
	return c, nil
}

// scriptTurn and scriptToolCall are a scripted model's turn as
// docs/providers.md documents it.
type scriptTurn struct {
	Content   string           `json:"content,omitempty"`
	ToolCalls []scriptToolCall `json:"tool_calls,omitempty"`
	Usage     *provider.Usage  `json:"usage,omitempty"`
}

type scriptToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // sent exactly as the model wrote them
}

// ExportScript is a finished run's model turns as a scripted model's
// script, played in order. model, when not empty, keeps the turns of that
// model address only; a run whose agents used several models needs one
// script per model, and says so.
func ExportScript(stateDir, runID, model string) ([]byte, error) {
	ts, err := turns(stateDir, runID)
	if err != nil {
		return nil, err
	}
	models := map[string]bool{}
	var out struct {
		Turns       []scriptTurn `json:"turns"`
		OnExhausted string       `json:"on_exhausted"`
	}
	out.OnExhausted = "error"
	for _, t := range ts {
		d := t.data
		models[d.Model] = true
		if model != "" && d.Model != model {
			continue
		}
		st := scriptTurn{Content: d.Content}
		if d.UsageKnown {
			u := d.Usage
			st.Usage = &u
		}
		for _, c := range d.ToolCalls {
			st.ToolCalls = append(st.ToolCalls, scriptToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		if st.Content == "" && len(st.ToolCalls) == 0 {
			continue
		}
		out.Turns = append(out.Turns, st)
	}
	if model == "" && len(models) > 1 {
		var names []string
		for m := range models {
			names = append(names, m)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("run %s called %d models (%s): a script plays one model's turns, so export one script per model with --model", runID, len(names), strings.Join(names, ", "))
	}
	if len(out.Turns) == 0 {
		return nil, errors.New("no model turn to export for " + model)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
