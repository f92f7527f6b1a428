// Package anthropic is a provider.Model for Anthropic's Messages API,
// through the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
// It maps symbi's conversation to the API's (the system prompt as the
// top-level system field, tool results as user tool_result blocks,
// consecutive messages of one role merged, extended-thinking blocks sent
// back unchanged with their signatures, tool_use ids kept); streams text,
// thinking (as reasoning) and tool-call input as they arrive; reports usage
// with the prompt cache's reads and writes apart; and applies the same
// transport rules as the openai provider: retries of 429, 5xx, overloaded
// and broken connections before any content was delivered (honouring
// Retry-After), the four stream timeouts, a bound on every response and on
// every body before the SDK reads it, and a *provider.Error whose kind says
// what went wrong, for errors sent as a response or inside the stream. The
// SDK's own retries and its reading of the environment (ANTHROPIC_API_KEY,
// ANTHROPIC_BASE_URL, profiles) are turned off: symbi decides both. The API
// key never appears in an error.
//
// It must not import the engine, policies or tools.
package anthropic
