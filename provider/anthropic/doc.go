// Package anthropic is a provider.Model for Anthropic's Messages API,
// through symbi's own small client of it: the request and the response as
// plain structs (wire.go), one POST to /v1/messages, and a reader of its
// server-sent events (sse.go).
//
// It used the official SDK (github.com/anthropics/anthropic-sdk-go/v2)
// until the SDK's cost outgrew its use: with what it pulls in (a JSON
// schema generator, a YAML parser, tidwall's JSON libraries, …) it added
// 12 MB to the symbi binary (41.7 against 29.7 MB), 23 package inits and
// 2 MiB to every process's peak, and a one-round run took 0.955 of the
// time without it (docs/benchmarks.md, "Phase 5"), in every process,
// whether its plan calls Claude or not. The provider needs little of it,
// and already made every transport decision itself: the SDK's retries and
// its reading of the environment were turned off. The requests sent are
// byte for byte the ones the SDK sent (TestWireBodies), with the same
// headers but for the SDK's own telemetry (User-Agent, X-Stainless-*).
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
// every body before it is read, and a *provider.Error whose kind says what
// went wrong, for errors sent as a response or inside the stream. Nothing
// is read from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL): the
// plan decides. The API key never appears in an error.
//
// It must not import the engine, policies or tools.
package anthropic
