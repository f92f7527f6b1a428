package engine

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/symbi-dev/symbi/journal"
	"github.com/symbi-dev/symbi/provider"
)

// Event is what OnEvent receives: every journal event as it is written
// (Type is a journal event type and Data its JSON), and the streamed content
// and reasoning of model turns (Type ContentDelta or ReasoningDelta, Delta
// the text).
type Event struct {
	Seq       int64           `json:"seq,omitempty"`
	Time      time.Time       `json:"ts"`
	RunID     string          `json:"run"`
	Agent     string          `json:"agent"`
	Depth     int             `json:"depth,omitempty"`
	Iteration int             `json:"iteration"`
	Type      string          `json:"event"`
	Data      json.RawMessage `json:"data,omitempty"`
	Delta     string          `json:"delta,omitempty"`
	// Value is Data already decoded (journal.Event.Value), for the events
	// shown on every round: reasoning_complete, policy_evaluated and
	// tool_result. It is set only when decoding Data gives it back: Data
	// is its encoding, unredacted, and no text in it was coerced to valid
	// UTF-8; otherwise it is nil. It shares memory with the run: read it
	// while OnEvent runs, never change it.
	Value any `json:"-"`
}

// Journal is the journal line ev is (or, for a run without a journal,
// would be), with its Value.
func (ev Event) Journal() journal.Event {
	return journal.Event{Seq: ev.Seq, Time: ev.Time, RunID: ev.RunID, Agent: ev.Agent, Iteration: ev.Iteration, Type: ev.Type, Data: ev.Data, Value: ev.Value}
}

// shownValue is data as the journal type a reader decodes it into, for the
// event types Event.Value is set for; nil for the others.
func shownValue(data any) any {
	switch d := data.(type) {
	case reasoningData:
		return d.ReasoningCompleteData
	case journal.PolicyEvaluatedData:
		return d
	case journal.ToolResultData:
		return d
	}
	return nil
}

// decodesTo reports whether decoding encoded, json.Marshal's encoding of a
// value, gives that value back, as far as the event types shownValue
// knows go: encoding/json writes a string's invalid UTF-8 as \ufffd,
// which decodes to another string. (A string that holds the six
// characters \ufffd makes this say false too: the event is decoded.)
func decodesTo(encoded []byte) bool {
	return !bytes.Contains(encoded, []byte(`\ufffd`))
}

// ContentDelta is the type of a streamed piece of a model turn. It is not
// journalled: reasoning_complete carries the whole turn.
const ContentDelta = "content_delta"

// ReasoningDelta is the type of a streamed piece of the reasoning a model
// sent apart from its answer (shown dimmed, never part of the answer). It
// is not journalled: reasoning_complete carries the whole reasoning.
const ReasoningDelta = "reasoning_delta"

// ModelFirstEvent and ToolCallDelta are lifecycle events of a model call
// (journal.ModelFirstEvent, journal.ToolCallDelta): shown, not journalled.
// A tool_call_delta's Data is journal.ToolCallDeltaData and its Delta the
// piece of the arguments, redacted as content deltas are.
const (
	ModelFirstEvent = journal.ModelFirstEvent
	ToolCallDelta   = journal.ToolCallDelta
)

// startedData extends the journal's started event with what a resume needs.
type startedData struct {
	journal.StartedData
	Profile   string   `json:"profile,omitempty"`
	Depth     int      `json:"depth,omitempty"`
	Ancestors []string `json:"ancestors,omitempty"`
	// BaseDir is the configuration directory, absolute, so a resume finds
	// the files a plan refers to by path.
	BaseDir string `json:"base_dir,omitempty"`
}

// reasoningData extends reasoning_complete with the assistant message, so a
// resumed run can rebuild the conversation.
type reasoningData struct {
	journal.ReasoningCompleteData
	Message provider.Message `json:"message"`
}

// observationsData extends observations_collected with the messages the
// observations became.
type observationsData struct {
	journal.ObservationsCollectedData
	Messages []provider.Message `json:"messages"`
}

// ShownOnly reports whether events of type typ are shown (the live output,
// --json) and never journalled: the deltas of the answer, the reasoning and
// a tool call, and a model call's first event. A timeline made of a run's
// events (a durable runtime's) leaves them out, as the journal does.
func ShownOnly(typ string) bool {
	switch typ {
	case ContentDelta, ReasoningDelta, ModelFirstEvent, ToolCallDelta:
		return true
	}
	return false
}
