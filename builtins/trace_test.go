package builtins

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/symbi-dev/symbi/plan"
)

// traceServer is an MCP server whose one tool answers with the
// traceparent of the request's _meta.
func traceServer(t *testing.T) plan.MCPServer {
	s := mcp.NewServer(&mcp.Implementation{Name: "tracemeta", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "tp"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			tp, _ := req.Params.GetMeta()["traceparent"].(string)
			return textResult("tp=" + tp), nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return plan.MCPServer{Address: "mcp_server.tracemeta", URL: plan.Lit(ts.URL), Effect: "read", Timeout: plan.Duration(20 * time.Second)}
}

// withSpan is a context whose span is a fixed, sampled one.
func withSpan() (context.Context, string) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled,
	})
	return trace.ContextWithSpanContext(context.Background(), sc), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
}

// TestTraceContextReachesEveryExecutor: under a span, a command tool finds
// TRACEPARENT in its environment, an http tool the traceparent header and
// an MCP tool _meta's traceparent; the http_get builtin, which fetches what
// the model asks for, sends none; and without a span nothing is sent.
func TestTraceContextReachesEveryExecutor(t *testing.T) {
	headers := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Get("traceparent")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	get := plan.Tool{Address: "tool.fetch", Effect: "read", Executor: plan.Executor{Kind: "builtin", Builtin: "http_get"}}
	tools := []plan.Tool{
		commandTool("cmd", nil, "sh", "-c", `printf 'tp=%s' "$TRACEPARENT"`),
		httpTool("web", srv.URL, "POST"),
		get,
	}
	tb := newToolbox(t, tools, []plan.MCPServer{traceServer(t)}, Options{BaseDir: testdataDir(t), HTTPAllowHosts: []string{u.Host}})
	ctx, want := withSpan()
	for _, tool := range []string{"cmd", "tp"} {
		r, err := tb.Call(ctx, approveCall(t, tb, tool, "c1", `{}`))
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if r.Content != "tp="+want {
			t.Errorf("%s saw %q, want tp=%s", tool, r.Content, want)
		}
		if r, _ := tb.Call(context.Background(), approveCall(t, tb, tool, "c1", `{}`)); r.Content != "tp=" {
			t.Errorf("%s without a span saw %q", tool, r.Content)
		}
	}
	if _, err := tb.Call(ctx, approveCall(t, tb, "web", "c1", `{}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-headers; got != want {
		t.Errorf("http tool: traceparent %q, want %q", got, want)
	}
	if _, err := tb.Call(ctx, approveCall(t, tb, "fetch", "c1", `{"url":"`+srv.URL+`"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-headers; got != "" {
		t.Errorf("http_get sent traceparent %q", got)
	}
}

// TestObserveSeesEveryAttempt: Observe is called for each call, the
// context it returns is the one the tool runs under, and end sees the
// outcome and a breaker's change of state.
func TestObserveSeesEveryAttempt(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	observe := func(ctx context.Context, c Call) (context.Context, func(CallEnd)) {
		sctx, _ := withSpan()
		return trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(sctx)), func(e CallEnd) {
			mu.Lock()
			defer mu.Unlock()
			s := c.Tool + "/" + c.CallID
			if e.Err != nil {
				s += " " + string(KindOf(e.Err))
			} else {
				s += " " + e.Result.Content
			}
			if e.BreakerBefore != e.BreakerAfter {
				s += " " + string(e.BreakerBefore) + "->" + string(e.BreakerAfter)
			}
			seen = append(seen, s)
		}
	}
	failing := commandTool("flaky", nil, "sh", "-c", "exit 1")
	failing.CircuitBreaker = &plan.CircuitBreaker{FailureThreshold: 1, RecoveryTimeout: plan.Duration(time.Hour), HalfOpenMaxCalls: 1}
	tools := []plan.Tool{commandTool("cmd", nil, "sh", "-c", `printf '%.2s' "$TRACEPARENT"`), failing}
	tb := newToolbox(t, tools, nil, Options{BaseDir: testdataDir(t), Observe: observe})
	if _, err := tb.Call(context.Background(), approveCall(t, tb, "cmd", "c1", `{}`)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err := tb.Call(context.Background(), approveCall(t, tb, "flaky", "c2", `{}`))
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("flaky: %v", err)
		}
	}
	want := "cmd/c1 00|flaky/c2 error closed->open|flaky/c2 circuit_open"
	if got := strings.Join(seen, "|"); got != want {
		t.Errorf("observed\n %s\nwant\n %s", got, want)
	}
}
