package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"
)

// chunk is one event of a Chat Completions stream as servers send it.
// go-openai's own chunk type leaves out what several of them add: reasoning
// under other names than reasoning_content, and errors that do not begin
// the event (go-openai catches only an event that starts with {"error":).
type chunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   *goopenai.Usage `json:"usage"`
	// Error is an error sent inside a chunk, as OpenRouter does mid-answer
	// (with finish_reason "error").
	Error json.RawMessage `json:"error"`
	// Object "error" is an event that is itself an error object, its
	// message, type and code at the top (vLLM's older error body).
	Object string `json:"object"`
}

type chunkChoice struct {
	Index int        `json:"index"`
	Delta chunkDelta `json:"delta"`
	// FinishReason is "" while the turn goes on (null on the wire).
	FinishReason string `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string              `json:"content"`
	Refusal   string              `json:"refusal"`
	ToolCalls []goopenai.ToolCall `json:"tool_calls"`
	reasoningFields
}

// reasoningFields are the names servers send reasoning under, in a delta
// or a plain answer's message. They are read leniently (see reasoningOf):
// a server that sends them in another shape loses its reasoning, not its
// answer.
type reasoningFields struct {
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ReasoningDetails json.RawMessage `json:"reasoning_details"`
}

// decodeChunk reads one event's data.
func decodeChunk(data []byte) (chunk, error) {
	var c chunk
	err := json.Unmarshal(data, &c)
	return c, err
}

// errorOf returns the error the chunk carries, or nil: an "error" member
// (an object, or only a message as text), or the chunk itself when its
// object is "error".
func (c *chunk) errorOf(data []byte) *goopenai.APIError {
	raw := c.Error
	if c.Object == "error" {
		raw = data
	}
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var e goopenai.APIError
	if err := json.Unmarshal(raw, &e); err == nil {
		return &e
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return &goopenai.APIError{Message: text}
	}
	return &goopenai.APIError{Message: "an error the server sent in a form that cannot be read: " + snippet(raw)}
}

// plainError is the error a plain answer with status 200 carries instead
// of choices, or nil.
func plainError(body []byte) *goopenai.APIError {
	var c chunk
	if json.Unmarshal(body, &c) != nil {
		return nil
	}
	return c.errorOf(body)
}

// errFinishedWithError is a stream that ended its turn with finish_reason
// "error" and no error object to say more.
var errFinishedWithError = errors.New(`the server ended the answer with finish_reason "error"`)

// reasoningOf is the reasoning text of one delta. Servers name it
// differently, and some send the same text under two names (vLLM sent
// reasoning_content and reasoning while it renamed the one to the other;
// OpenRouter sends reasoning and reasoning_details), so the first name
// present is used: reasoning_content (DeepSeek, llama.cpp, older vLLM),
// reasoning (vLLM, Ollama, OpenRouter), then reasoning_details (OpenRouter:
// the text of its reasoning.text entries and the summaries of its
// reasoning.summary entries, which carry OpenAI's reasoning summaries;
// reasoning.encrypted entries have nothing to show).
func reasoningOf(d *reasoningFields) string {
	if s, ok := jsonText(d.ReasoningContent); ok {
		return s
	}
	if s, ok := jsonText(d.Reasoning); ok {
		return s
	}
	return detailsText(d.ReasoningDetails)
}

// plainReasoning is the reasoning of a plain answer, read from its body
// (go-openai knows only reasoning_content).
func plainReasoning(body []byte) string {
	var r struct {
		Choices []struct {
			Message reasoningFields `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Choices) == 0 {
		return ""
	}
	return reasoningOf(&r.Choices[0].Message)
}

// jsonText is raw's value when it is a non-empty JSON string.
func jsonText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || s == "" {
		return "", false
	}
	return s, true
}

// reasoningDetail is one entry of OpenRouter's reasoning_details.
type reasoningDetail struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Summary string `json:"summary"`
}

func detailsText(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '[' {
		return ""
	}
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return ""
	}
	var out strings.Builder
	for _, e := range entries {
		var d reasoningDetail
		if json.Unmarshal(e, &d) != nil {
			continue
		}
		switch d.Type {
		case "reasoning.text":
			out.WriteString(d.Text)
		case "reasoning.summary":
			out.WriteString(d.Summary)
		}
	}
	return out.String()
}
