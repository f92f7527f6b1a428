package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/symbi-dev/symbi/provider"
)

// emptySchema is sent for a tool without one: the API wants an object
// schema for every tool.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// messagesRequest maps a provider request to the Messages API:
//
//   - the leading system messages become the top-level system field, one
//     text block each; a system message later in the conversation (a
//     context strategy's note) becomes user text where it stands;
//   - tool results become tool_result blocks of a user message, ahead of
//     any text in it, as the API requires;
//   - consecutive messages of one role are merged into one message, since
//     the API wants the roles to alternate;
//   - an assistant message's thinking blocks go first, unchanged, then its
//     text, then its tool calls as tool_use blocks with their ids;
//   - empty text is left out (the API refuses an empty text block).
//
// Mistakes the API would reject anyway are caught here, with a clearer
// message.
func (m *Model) messagesRequest(req provider.Request) (sdk.MessageNewParams, error) {
	out := sdk.MessageNewParams{Model: sdk.Model(m.cfg.Model)}
	if req.Model != "" {
		out.Model = sdk.Model(req.Model)
	}
	maxTokens := m.cfg.MaxTokens
	if req.MaxOutputTokens > 0 {
		maxTokens = req.MaxOutputTokens
	}
	out.MaxTokens = int64(maxTokens)

	i := 0
	for ; i < len(req.Messages) && req.Messages[i].Role == provider.System; i++ {
		if req.Messages[i].Content != "" {
			out.System = append(out.System, sdk.TextBlockParam{Text: req.Messages[i].Content})
		}
	}
	var conv conversation
	for ; i < len(req.Messages); i++ {
		msg := &req.Messages[i]
		switch msg.Role {
		case provider.User, provider.System:
			conv.user(text(msg.Content)...)
		case provider.ToolRole:
			if msg.ToolCallID == "" {
				return out, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: a tool message needs the tool_call_id it answers", i))
			}
			result := &sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.Content != "" {
				result.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: msg.Content}}}
			}
			conv.toolResult(sdk.ContentBlockParamUnion{OfToolResult: result})
		case provider.Assistant:
			var blocks []sdk.ContentBlockParamUnion
			for _, t := range msg.Thinking {
				switch {
				case t.Redacted != "":
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: t.Redacted}})
				case t.Signature != "":
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: t.Text, Signature: t.Signature}})
				}
				// Thinking without a signature did not come from the
				// API, which would refuse it.
			}
			blocks = append(blocks, text(msg.Content)...)
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)}})
			}
			conv.assistant(blocks...)
		default:
			return out, m.typed(provider.InvalidRequest, "", 0, fmt.Errorf("messages[%d]: unknown role %q", i, msg.Role))
		}
	}
	out.Messages = conv.msgs

	for _, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptySchema
		}
		tool := &sdk.ToolParam{
			Name: t.Name,
			// The schema goes on the wire as written.
			InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
		}
		if t.Description != "" {
			tool.Description = sdk.String(t.Description)
		}
		out.Tools = append(out.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	forced := false
	switch tc := req.ToolChoice; {
	case len(req.Tools) == 0 || tc == "":
		// With no tools there is nothing to choose: the field is left out.
	case tc == "auto":
		out.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
	case tc == "none":
		out.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case tc == "required":
		out.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		forced = true
	case hasTool(req.Tools, tc):
		out.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: tc}}
		forced = true
	default:
		return out, m.typed(provider.InvalidRequest, "tool_choice", 0, fmt.Errorf("tool_choice %q is not auto, required, none or one of the request's tools", tc))
	}

	// The API refuses thinking with a forced tool choice, a budget that
	// is not below max_tokens, and a tool-use turn in progress whose
	// assistant message started without thinking (thinking cannot be
	// switched on in the middle of a turn): such a call goes without
	// thinking rather than failing.
	switch budget := min(m.cfg.ThinkingBudget, maxTokens-1); {
	case forced, conv.toolTurnWithoutThinking():
	case m.cfg.Thinking == ThinkingAdaptive:
		out.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	case m.cfg.Thinking == ThinkingEnabled && budget >= MinThinkingBudget:
		out.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}}
	}
	switch m.cfg.PromptCache {
	case "5m", "1h":
		out.CacheControl = sdk.CacheControlEphemeralParam{TTL: sdk.CacheControlEphemeralTTL(m.cfg.PromptCache)}
	}
	// Not sent: the temperature (the Messages API has none since version
	// 2026-10-21) and the JSON answer mode (structured output needs a
	// schema; symbi's JSON requests say what they want in the prompt, and
	// the engine reads the outermost object of the answer).
	return out, nil
}

// conversation builds the messages, merging consecutive ones of a role.
type conversation struct {
	msgs []sdk.MessageParam
}

func (c *conversation) last(role string) *sdk.MessageParam {
	if n := len(c.msgs); n > 0 {
		m := &c.msgs[n-1]
		if (role == "user" && m.OfUser != nil) || (role == "assistant" && m.OfAssistant != nil) {
			return m
		}
	}
	return nil
}

func (c *conversation) user(blocks ...sdk.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	if m := c.last("user"); m != nil {
		m.OfUser.Content = append(m.OfUser.Content, blocks...)
		return
	}
	c.msgs = append(c.msgs, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
}

// toolResult adds a result to the user message after the tool calls, ahead
// of any text already in it: the API wants tool results first.
func (c *conversation) toolResult(block sdk.ContentBlockParamUnion) {
	m := c.last("user")
	if m == nil {
		c.user(block)
		return
	}
	content := m.OfUser.Content
	at := 0
	for at < len(content) && content[at].OfToolResult != nil {
		at++
	}
	m.OfUser.Content = append(content[:at], append([]sdk.ContentBlockParamUnion{block}, content[at:]...)...)
}

func (c *conversation) assistant(blocks ...sdk.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	if m := c.last("assistant"); m != nil {
		m.OfAssistant.Content = append(m.OfAssistant.Content, blocks...)
		return
	}
	c.msgs = append(c.msgs, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
}

// toolTurnWithoutThinking reports whether the last assistant message has
// tool uses and does not start with a thinking block: the API wants one
// there when thinking is on.
func (c *conversation) toolTurnWithoutThinking() bool {
	for i := len(c.msgs) - 1; i >= 0; i-- {
		a := c.msgs[i].OfAssistant
		if a == nil {
			continue
		}
		tools := false
		for _, b := range a.Content {
			tools = tools || b.OfToolUse != nil
		}
		first := a.Content[0]
		return tools && first.OfThinking == nil && first.OfRedactedThinking == nil
	}
	return false
}

// text is s as a text block, or none when s is empty.
func text(s string) []sdk.ContentBlockParamUnion {
	if s == "" {
		return nil
	}
	return []sdk.ContentBlockParamUnion{{OfText: &sdk.TextBlockParam{Text: s}}}
}

// toolInput is a call's arguments as the tool_use input the API wants: the
// JSON object as it is. Arguments that are not an object (a call another
// provider made, that the engine answered with an error) go as {}.
func toolInput(args string) json.RawMessage {
	b := bytes.TrimSpace([]byte(args))
	var obj map[string]json.RawMessage
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &obj) != nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}

func hasTool(tools []provider.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
