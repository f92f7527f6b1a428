// Package msgkey identifies a message by what the engine's per-message
// caches read of it (content, name, tool calls), so the token estimates
// (package estimate) and the redactor's clean-message cache (package
// redact) can tell a message they know from one changed in place or
// replaced.
//
// It knows messages from package provider, and must not import the engine
// or the journal.
package msgkey
