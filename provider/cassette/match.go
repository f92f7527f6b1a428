package cassette

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/symbi-dev/symbi/provider"
)

// normalized is what Match.Normalize puts in place of the text it matches.
const normalized = "…"

// Canonical is what of a request is compared with a recorded one: r with
// the ignored fields cleared, the text Normalize matches replaced in
// message content and tool call arguments, and tool parameters compacted.
// Everything else counts: every message with its role, content, tool calls
// and tool call id, every tool's name, description and parameters, the tool
// choice, the temperature and the JSON answer mode.
func (m *Match) Canonical(r provider.Request) provider.Request {
	out := provider.Request{
		Model:           r.Model,
		ToolChoice:      r.ToolChoice,
		MaxOutputTokens: r.MaxOutputTokens,
		JSON:            r.JSON,
	}
	if r.Temperature != nil {
		t := *r.Temperature
		out.Temperature = &t
	}
	out.Messages = make([]provider.Message, len(r.Messages))
	for i, msg := range r.Messages {
		msg.Content = m.normalize(msg.Content)
		if len(msg.ToolCalls) > 0 {
			calls := make([]provider.ToolCall, len(msg.ToolCalls))
			for j, c := range msg.ToolCalls {
				c.Arguments = m.normalize(c.Arguments)
				calls[j] = c
			}
			msg.ToolCalls = calls
		}
		msg.Thinking = slices.Clone(msg.Thinking)
		out.Messages[i] = msg
	}
	if len(r.Tools) > 0 {
		out.Tools = make([]provider.ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = compact(t.Parameters)
			out.Tools[i] = t
		}
	}
	for _, f := range m.Ignore {
		switch f {
		case "model":
			out.Model = ""
		case "temperature":
			out.Temperature = nil
		case "max_output_tokens":
			out.MaxOutputTokens = 0
		case "tool_choice":
			out.ToolChoice = ""
		case "json":
			out.JSON = false
		case "tools":
			out.Tools = nil
		}
	}
	return out
}

// Digest is the digest of a request's canonical form: two requests match
// exactly when their digests are equal.
func (m *Match) Digest(r provider.Request) string {
	b, err := json.Marshal(m.Canonical(r))
	if err != nil {
		// A request is strings, numbers and valid JSON parameters;
		// Marshal of it cannot fail. Should it, nothing matches it.
		return "unencodable"
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (m *Match) normalize(s string) string {
	for _, re := range m.patterns {
		s = re.ReplaceAllLiteralString(s, normalized)
	}
	return s
}

// compact is a JSON value without insignificant space; invalid JSON is
// kept as it is (Parse refuses it in a cassette, a live request may hold
// anything).
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
