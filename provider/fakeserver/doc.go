// Package fakeserver is a local HTTP server that speaks the OpenAI Chat
// Completions wire format and Anthropic's Messages API, plain JSON and
// server-sent events, scripted per test with one set of replies for both,
// with injectable faults (429 with Retry-After, 500, connection reset,
// stalls before the first event and mid-stream, malformed JSON, truncated
// streams, errors sent inside a stream as OpenAI, vLLM, LiteLLM, OpenRouter,
// Ollama and Anthropic send them), the shapes real servers give a stream (no
// finish reason before [DONE], reasoning under each of its names) and hostile
// floods (content without end, tool-call arguments of any size, in one line
// if asked) generated as they are sent. Tests and benchmarks point the openai
// provider, or a bare go-openai client, at Server.URL(), and the anthropic
// provider at Server.AnthropicURL(). Messages API requests are checked
// against the rules the real API enforces.
//
// It is real HTTP on a loopback port, not a stub: what a client sends is
// decoded and recorded, and what it receives is what a provider would send.
// It must not import the engine, policies or tools.
package fakeserver
