package temporal

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"time"

	"go.temporal.io/sdk/workflow"
)

// The engine's calls take a context.Context; the workflow's blocking calls
// need the workflow.Context of the coroutine they run on. Every context the
// engine is given carries that workflow.Context as a value, and the
// runtime's Go puts each coroutine's own in the contexts it hands out.
type workflowKey struct{}

func withWorkflow(ctx context.Context, w workflow.Context) context.Context {
	return context.WithValue(ctx, workflowKey{}, w)
}

// workflowOf is the workflow.Context of the coroutine ctx belongs to.
func workflowOf(ctx context.Context) workflow.Context {
	w, ok := ctx.Value(workflowKey{}).(workflow.Context)
	if !ok {
		// Only this package makes the engine's contexts: a context without
		// one is a programming error, not an input.
		panic("temporal: a context without its workflow context")
	}
	return w
}

// runtime is one workflow execution's side of engine.Runtime: the root
// context whose cancellation is the workflow's, coroutines for the
// engine's concurrency, workflow timers for its deadlines.
type runtime struct {
	root   workflow.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newRuntime(w workflow.Context) *runtime {
	ctx, cancel := context.WithCancelCause(context.Background())
	rt := &runtime{root: w, cancel: cancel}
	rt.ctx = withWorkflow(ctx, w)
	// A cancellation request ends the root workflow context; the engine
	// sees it as its own context's end.
	workflow.Go(w, func(c workflow.Context) {
		c.Done().Receive(c, nil)
		rt.cancel(context.Canceled)
	})
	return rt
}

// sync carries a workflow cancellation to the engine's context at once,
// before the engine looks at it after a blocking call (the watching
// coroutine may not have run yet).
func (rt *runtime) sync() {
	if rt.root.Err() != nil {
		rt.cancel(context.Canceled)
	}
}

// goAll is engine.Runtime.Go: coroutines, at most limit at a time.
func (rt *runtime) goAll(ctx context.Context, limit int, fns []func(context.Context)) {
	w := workflowOf(ctx)
	if limit <= 0 || limit > len(fns) {
		limit = len(fns)
	}
	sem := workflow.NewSemaphore(w, int64(max(limit, 1)))
	wg := workflow.NewWaitGroup(w)
	for _, fn := range fns {
		if err := sem.Acquire(w, 1); err != nil {
			rt.sync()
			fn(ctx) // cancelled: it sees ctx ended and starts nothing
			continue
		}
		wg.Add(1)
		workflow.Go(w, func(c workflow.Context) {
			defer wg.Done()
			defer sem.Release(1)
			fn(withWorkflow(ctx, c))
		})
	}
	wg.Wait(w)
}

// withTimeout is engine.Runtime.WithTimeout: a workflow timer ends both
// the engine's context (with cause) and the workflow context the calls
// under it block on, so an activity in flight is cancelled too.
func (rt *runtime) withTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	w := workflowOf(ctx)
	c, cancel := context.WithCancelCause(ctx)
	wc, wcancel := workflow.WithCancel(w)
	workflow.Go(wc, func(g workflow.Context) {
		if err := workflow.Sleep(g, d); err == nil {
			cancel(cause)
			wcancel()
		}
	})
	return withWorkflow(c, wc), func() {
		cancel(context.Canceled)
		wcancel()
	}
}

// withCancel is engine.Runtime.WithCancel: its cancellation ends both the
// engine's context and the workflow context the calls under it block on.
func (rt *runtime) withCancel(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	c, cancel := context.WithCancelCause(ctx)
	wc, wcancel := workflow.WithCancel(workflowOf(ctx))
	return withWorkflow(c, wc), func(cause error) {
		cancel(cause)
		wcancel()
	}
}

// sleep is engine.Options.Sleep: a workflow timer.
func (rt *runtime) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	err := workflow.Sleep(workflowOf(ctx), d)
	rt.sync()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return context.Canceled
	}
	return ctx.Err()
}

// seeded is the run's randomness: a stream seeded from the workflow's id
// and run id, the same on every replay.
func seeded(w workflow.Context) *rand.ChaCha8 {
	info := workflow.GetInfo(w)
	return rand.NewChaCha8(sha256.Sum256([]byte("symbi/run-rand/v1\x00" + info.WorkflowExecution.ID + "\x00" + info.WorkflowExecution.RunID)))
}
