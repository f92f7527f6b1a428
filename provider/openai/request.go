package openai

import (
	"encoding/json"
	"fmt"
	"math"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/symbi-dev/symbi/provider"
)

// emptyParameters is sent for a tool without a schema: OpenAI rejects a null
// "parameters".
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest maps a provider request to the wire. Mistakes the server would
// reject anyway are caught here, with a clearer message.
func (m *Model) chatRequest(req provider.Request) (goopenai.ChatCompletionRequest, error) {
	out := goopenai.ChatCompletionRequest{Model: m.cfg.Model}
	if req.Model != "" {
		out.Model = req.Model
	}
	for i, msg := range req.Messages {
		wire := goopenai.ChatCompletionMessage{Content: msg.Content}
		switch msg.Role {
		case provider.System, provider.User:
			wire.Role = string(msg.Role)
		case provider.Assistant:
			wire.Role = string(msg.Role)
			for _, c := range msg.ToolCalls {
				wire.ToolCalls = append(wire.ToolCalls, goopenai.ToolCall{
					ID: c.ID, Type: goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: c.Name, Arguments: c.Arguments},
				})
			}
		case provider.ToolRole:
			wire.Role = string(msg.Role)
			wire.ToolCallID = msg.ToolCallID
			if msg.ToolCallID == "" {
				return out, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: a tool message needs the tool_call_id it answers", i))
			}
		default:
			return out, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: unknown role %q", i, msg.Role))
		}
		out.Messages = append(out.Messages, wire)
	}
	names := map[string]bool{}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptyParameters
		}
		out.Tools = append(out.Tools, goopenai.Tool{
			Type:     goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
		names[t.Name] = true
	}
	// tool_choice without tools is an error at OpenAI; with no tools there is
	// nothing to choose, so it is left out.
	switch tc := req.ToolChoice; {
	case len(req.Tools) == 0 || tc == "":
	case tc == "auto" || tc == "required" || tc == "none":
		out.ToolChoice = tc
	case names[tc]:
		out.ToolChoice = goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: tc}}
	default:
		return out, m.typed(provider.InvalidRequest, "tool_choice", 0, fmt.Errorf("tool_choice %q is not auto, required, none or one of the request's tools", tc))
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		if t == 0 {
			// go-openai drops a zero temperature (omitempty); the smallest
			// float32 is sent instead, which every server treats as 0.
			t = math.SmallestNonzeroFloat32
		}
		out.Temperature = t
	}
	if req.MaxOutputTokens > 0 {
		if m.maxCompletionTokens {
			out.MaxCompletionTokens = req.MaxOutputTokens
		} else {
			out.MaxTokens = req.MaxOutputTokens
		}
	}
	if req.JSON {
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	if m.cfg.Streaming {
		out.Stream = true
		out.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	}
	return out, nil
}
