package engine

import (
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
