package builtins

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// approveCall is approve for a call with an id, as the engine gates them.
func approveCall(t testing.TB, tb *Toolbox, tool, callID, args string) policy.Approved {
	t.Helper()
	a := policy.Action{Type: policy.ToolCall, Tool: tool, CallID: callID, Arguments: json.RawMessage(args)}
	if info, ok := tb.Info(tool); ok {
		a.Effect, a.Tags = info.Effect, info.Tags
	}
	v := allowAll(t, tb).Gate(context.Background(), policy.Input{Action: a})
	if !v.Approved.Valid() {
		t.Fatalf("gate did not approve %s: %+v", tool, v.Decision)
	}
	return v.Approved
}

// metaServer is an MCP server over streamable HTTP whose one tool answers
// with the idempotency key it found in the request's _meta.
func metaServer(t *testing.T) plan.MCPServer {
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "record"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.GetMeta()[IdempotencyMeta].(string)
			return textResult("key=" + key), nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return plan.MCPServer{Address: "mcp_server.meta", URL: plan.Lit(ts.URL), Effect: "write", Timeout: plan.Duration(20 * time.Second)}
}

// TestIdempotencyKeyReachesEveryExecutor: under a call scope, a command
// tool finds the call's key in its environment, an http tool in the
// Idempotency-Key header and an MCP tool in the request's _meta; every
// retry of the call carries the same key, and a call without a scope
// carries none.
func TestIdempotencyKeyReachesEveryExecutor(t *testing.T) {
	headers := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Get(IdempotencyHeader)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	tools := []plan.Tool{
		commandTool("cmd", nil, "sh", "-c", `printf 'key=%s' "$`+IdempotencyEnv+`"`),
		httpTool("web", srv.URL, "POST"),
	}
	tb := newToolbox(t, tools, []plan.MCPServer{metaServer(t)}, Options{BaseDir: testdataDir(t)})
	want := IdempotencyKey("20261202T140950Z-0c4de812", 3, "call_7")
	if want != "20261202T140950Z-0c4de812/3/call_7" {
		t.Fatalf("IdempotencyKey = %q", want)
	}
	scoped := WithCallScope(context.Background(), "20261202T140950Z-0c4de812", 3)
	for attempt := 1; attempt <= 2; attempt++ {
		for _, tool := range []string{"cmd", "record"} {
			r, err := tb.Call(scoped, approveCall(t, tb, tool, "call_7", `{}`))
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			if r.Content != "key="+want {
				t.Errorf("attempt %d: %s saw %q, want key=%s", attempt, tool, r.Content, want)
			}
		}
		outs := tb.Dispatch(scoped, []policy.Approved{approveCall(t, tb, "web", "call_7", `{}`)}, 0, 0)
		if outs[0].Err != nil {
			t.Fatal(outs[0].Err)
		}
		if got := <-headers; got != want {
			t.Errorf("attempt %d: http tool got Idempotency-Key %q, want %q", attempt, got, want)
		}
	}

	for _, tool := range []string{"cmd", "record"} {
		r, err := tb.Call(context.Background(), approveCall(t, tb, tool, "call_7", `{}`))
		if err != nil || r.Content != "key=" {
			t.Errorf("unscoped %s: %q %v, want no key", tool, r.Content, err)
		}
	}
	if _, err := tb.Call(context.Background(), approveCall(t, tb, "web", "call_7", `{}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-headers; got != "" {
		t.Errorf("unscoped http call sent Idempotency-Key %q", got)
	}
}

// TestIdempotencyHeaderWrittenInTheBlockWins: an author who sets the header
// keeps it.
func TestIdempotencyHeaderWrittenInTheBlockWins(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(IdempotencyHeader)
	}))
	defer srv.Close()
	tool := httpTool("web", srv.URL, "POST")
	tool.Executor.HTTP.Headers = map[string]plan.String{IdempotencyHeader: plan.Lit("mine")}
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{})
	if _, err := tb.Call(WithCallScope(context.Background(), "r", 1), approveCall(t, tb, "web", "c", `{}`)); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != "mine" {
		t.Errorf("Idempotency-Key %q, want the block's", h)
	}
}
