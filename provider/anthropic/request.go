package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

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
func (m *Model) messagesRequest(req provider.Request) (messagesBody, error) {
	out := messagesBody{Model: m.cfg.Model, Stream: m.cfg.Streaming}
	if req.Model != "" {
		out.Model = req.Model
	}
	maxTokens := m.cfg.MaxTokens
	if req.MaxOutputTokens > 0 {
		maxTokens = req.MaxOutputTokens
	}
	out.MaxTokens = int64(maxTokens)

	i := 0
	for ; i < len(req.Messages) && req.Messages[i].Role == provider.System; i++ {
		if req.Messages[i].Content != "" {
			out.System = append(out.System, textBlock{Text: req.Messages[i].Content, Type: "text"})
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
			conv.toolResult(toolResultContent(msg.ToolCallID, msg.Content))
		case provider.Assistant:
			var blocks []contentBlock
			for _, t := range msg.Thinking {
				switch {
				case t.Redacted != "":
					blocks = append(blocks, redactedThinkingContent(t.Redacted))
				case t.Signature != "":
					blocks = append(blocks, thinkingContent(t.Text, t.Signature))
				}
				// Thinking without a signature did not come from the
				// API, which would refuse it.
			}
			blocks = append(blocks, text(msg.Content)...)
			for _, c := range msg.ToolCalls {
				blocks = append(blocks, toolUseContent(c.ID, c.Name, toolInput(c.Arguments)))
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
		// The schema goes on the wire as written.
		out.Tools = append(out.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	forced := false
	switch tc := req.ToolChoice; {
	case len(req.Tools) == 0 || tc == "":
		// With no tools there is nothing to choose: the field is left out.
	case tc == "auto":
		out.ToolChoice = &toolChoice{Type: "auto"}
	case tc == "none":
		out.ToolChoice = &toolChoice{Type: "none"}
	case tc == "required":
		out.ToolChoice = &toolChoice{Type: "any"}
		forced = true
	case hasTool(req.Tools, tc):
		out.ToolChoice = &toolChoice{Type: "tool", Name: tc}
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
		out.Thinking = &thinkingParam{Type: "adaptive"}
	case m.cfg.Thinking == ThinkingEnabled && budget >= MinThinkingBudget:
		out.Thinking = &thinkingParam{Type: "enabled", BudgetTokens: int64(budget)}
	}
	switch m.cfg.PromptCache {
	case "5m", "1h":
		out.CacheControl = &cacheControl{Type: "ephemeral", TTL: m.cfg.PromptCache}
	}
	// Not sent: the temperature (the Messages API has none since version
	// 2026-10-21) and the JSON answer mode (structured output needs a
	// schema; symbi's JSON requests say what they want in the prompt, and
	// the engine reads the outermost object of the answer).
	return out, nil
}

// conversation builds the messages, merging consecutive ones of a role.
type conversation struct {
	msgs []wireMessage
}

func (c *conversation) last(role string) *wireMessage {
	if n := len(c.msgs); n > 0 && c.msgs[n-1].Role == role {
		return &c.msgs[n-1]
	}
	return nil
}

func (c *conversation) user(blocks ...contentBlock) {
	c.add("user", blocks)
}

func (c *conversation) add(role string, blocks []contentBlock) {
	if len(blocks) == 0 {
		return
	}
	if m := c.last(role); m != nil {
		m.Content = append(m.Content, blocks...)
		return
	}
	c.msgs = append(c.msgs, wireMessage{Role: role, Content: blocks})
}

// toolResult adds a result to the user message after the tool calls, ahead
// of any text already in it: the API wants tool results first.
func (c *conversation) toolResult(block contentBlock) {
	m := c.last("user")
	if m == nil {
		c.user(block)
		return
	}
	content := m.Content
	at := 0
	for at < len(content) && content[at].Type == "tool_result" {
		at++
	}
	m.Content = append(content[:at], append([]contentBlock{block}, content[at:]...)...)
}

func (c *conversation) assistant(blocks ...contentBlock) {
	c.add("assistant", blocks)
}

// toolTurnWithoutThinking reports whether the last assistant message has
// tool uses and does not start with a thinking block: the API wants one
// there when thinking is on.
func (c *conversation) toolTurnWithoutThinking() bool {
	for i := len(c.msgs) - 1; i >= 0; i-- {
		a := &c.msgs[i]
		if a.Role != "assistant" {
			continue
		}
		tools := false
		for _, b := range a.Content {
			tools = tools || b.Type == "tool_use"
		}
		first := a.Content[0]
		return tools && first.Type != "thinking" && first.Type != "redacted_thinking"
	}
	return false
}

// text is s as a text block, or none when s is empty.
func text(s string) []contentBlock {
	if s == "" {
		return nil
	}
	return []contentBlock{textContent(s)}
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
