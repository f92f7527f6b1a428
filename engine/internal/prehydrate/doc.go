// Package prehydrate is the pure part of a pre_hydrate block: finding the
// references in a task (URLs, paths, the block's own patterns) that a
// resolver exists for, building a resolver call's arguments from its
// schema, and cutting what it returned to the block's token limit.
//
// Calling the resolvers (through the gate, as any tool call) and putting
// their results into the conversation is the engine's (engine/prehydrate.go).
// This package must not import the engine, policy, builtins or a provider.
package prehydrate
