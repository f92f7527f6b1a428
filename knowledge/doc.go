// Package knowledge is an agent's long-term memory: an embedded store of
// subject-predicate-object facts with confidence (bbolt, one file), a
// deterministic relevance score to recall them by, and directory-scoped
// conventions read from files.
//
// It backs the recall_knowledge and store_knowledge tools and the facts the
// engine injects before each reasoning step; see docs/knowledge.md.
//
// This package must not import interp, the engine, builtins or policy, and it
// never calls a model: recall is word overlap, not embeddings, so the same
// store and query always give the same facts in the same order.
package knowledge
