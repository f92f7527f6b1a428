package openai

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider"
)

// connectTimeoutEveryTime calls a model whose connection never completes
// n times: every call must end as timeout (connect), dialled once (a
// timeout is not retried). dial, when set, is the transport's dialer.
func connectTimeoutEveryTime(t *testing.T, baseURL string, dial func(ctx context.Context, network, addr string) (net.Conn, error), n int) {
	t.Helper()
	var dials atomic.Int64
	base := http.DefaultTransport.(*http.Transport).Clone()
	inner := base.DialContext
	if dial != nil {
		inner = dial
	}
	base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return inner(ctx, network, addr)
	}
	sl := &sleeps{}
	m, err := New(Config{
		BaseURL: baseURL, Model: "m", Streaming: true, AllowNoKey: true,
		Timeouts:   plan.ModelTimeouts{Connect: plan.Duration(10 * time.Millisecond)},
		Retry:      plan.TransportRetry{MaxAttempts: 3},
		HTTPClient: &http.Client{Transport: base},
		Sleep:      sl.sleep,
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		before := dials.Load()
		_, err := m.Stream(ctx, ask("x"), nil)
		cancel()
		var pe *provider.Error
		switch {
		case errors.As(err, &pe):
			kinds[string(pe.Kind)+" ("+pe.Detail+")"]++
		default:
			kinds["other: "+err.Error()]++
		}
		if d := dials.Load() - before; d != 1 {
			kinds["dialled "+itoa(int(d))+" times"]++
		}
	}
	if len(kinds) != 1 || kinds["timeout (connect)"] != n {
		t.Errorf("%d calls ended as %v; want timeout (connect), dialled once, every time", n, kinds)
	}
	if len(sl.got()) != 0 {
		t.Errorf("waited %d times to retry a timeout", len(sl.got()))
	}
}

// TestConnectTimeoutIsDeterministic dials with a dialer that gives up at
// the deadline by a timer of its own, as the kernel's connect does, not
// when the context ends: the two race, and the call must still end as
// timeout (connect) every time.
func TestConnectTimeoutIsDeterministic(t *testing.T) {
	atDeadline := func(ctx context.Context, network, addr string) (net.Conn, error) {
		deadline, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("no deadline")
		}
		<-time.After(time.Until(deadline))
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.ErrDeadlineExceeded}
	}
	connectTimeoutEveryTime(t, "http://192.0.2.1:81/v1", atDeadline, 200)
}
