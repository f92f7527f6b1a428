package builtins

import (
	"context"
	"strconv"
)

// Where a tool finds its call's idempotency key.
const (
	// IdempotencyEnv is the environment variable a command tool reads.
	IdempotencyEnv = "SYMBI_IDEMPOTENCY_KEY"
	// IdempotencyHeader is the header an http tool's request carries.
	IdempotencyHeader = "Idempotency-Key"
	// IdempotencyMeta is the key of the MCP request's _meta that holds it,
	// prefixed as the MCP specification asks of implementation keys.
	IdempotencyMeta = "symbi.dev/idempotency-key"
)

// IdempotencyKey names one tool call for the tool itself:
// "<run id>/<iteration>/<call id>". It is the same every time that call
// runs — a retry, a fallback, the call completed on resume — and differs
// between calls (the iteration tells apart a model that reuses its call
// ids), so a tool can recognise a request it has already carried out.
func IdempotencyKey(runID string, iteration int, callID string) string {
	return runID + "/" + strconv.Itoa(iteration) + "/" + callID
}

// WithCallScope returns a context under which the toolbox gives every call
// it runs (Call, Dispatch, Recover) the IdempotencyKey of runID, iteration
// and the call's id. Without it, calls carry no key.
func WithCallScope(ctx context.Context, runID string, iteration int) context.Context {
	return context.WithValue(ctx, scopeKey{}, callScope{run: runID, iteration: iteration})
}

type scopeKey struct{}

type callScope struct {
	run       string
	iteration int
}

type idempotencyKey struct{}

// withIdempotencyKey puts the key of the call with id callID, when the
// caller set a scope, where the executors look for it.
func withIdempotencyKey(ctx context.Context, callID string) context.Context {
	s, ok := ctx.Value(scopeKey{}).(callScope)
	if !ok || callID == "" {
		return ctx
	}
	return context.WithValue(ctx, idempotencyKey{}, IdempotencyKey(s.run, s.iteration, callID))
}

// idempotencyKeyOf is the key an executor passes on; "" when the call has
// none.
func idempotencyKeyOf(ctx context.Context) string {
	k, _ := ctx.Value(idempotencyKey{}).(string)
	return k
}
