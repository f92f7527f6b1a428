// Package reflection is the pure part of reflect_and_retry and of best-of-N
// judges: the evaluation prompt, reading a score from an evaluator's answer
// (a JSON object or a bare number, combined by rubric weight), and the
// verdict a score gives (pass, revise, retry, block).
//
// The loop that generates, evaluates and revises is the engine's
// (engine/reflect.go): it needs the run. This package must not import the
// engine, the journal, policy or a provider.
package reflection
