// Package convo fits a conversation to the context token budget before every
// model call, by the agent's context strategy: sliding_window drops the
// oldest messages, observation_masking first replaces old tool results with
// a short placeholder, anchored_summary keeps the system message, the first
// user message and the recent ones with one deterministic note for the
// rest.
//
// Whatever it removes, Fit keeps the leading system messages and the most
// recent exchange, and never separates an assistant message with tool calls
// from its tool results (the OpenAI wire format rejects either orphan). Its
// result shares no backing array with its input, so a caller that replaces
// its history with the result holds only what the budget allows.
//
// This package must not import interp, the engine, builtins or any provider
// implementation; it only rearranges messages and never calls a model.
package convo
