// Package openai is a provider.Model for any OpenAI-compatible Chat
// Completions endpoint (OpenAI, OpenRouter, Ollama, vLLM, LM Studio,
// llama.cpp server), through github.com/sashabaranov/go-openai.
//
// It streams content deltas to the caller as they arrive and assembles
// tool-call deltas by index; retries 429, 5xx and broken connections before
// any content was delivered (honouring Retry-After); enforces the four stream
// timeouts (total, connect, first event, idle); bounds every response
// (max_response_bytes, and each line and body before go-openai reads it, since
// go-openai holds whatever it reads); reads what real servers add to the
// stream (reasoning under its several names, errors after the 200, [DONE]
// without a finish reason); and turns every failure into a
// *provider.Error whose kind says what went wrong, an error sent inside a
// stream the same way as the same error sent as a response. The API key
// never appears in an error.
//
// It must not import the engine, policies or tools.
package openai
