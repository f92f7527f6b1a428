package builtins

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/symbi-dev/symbi/plan"
)

// queryEcho answers with the raw query it received.
func queryEcho(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.RawQuery)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPFixedQueryIsNeverReplaced: the query written in the
// configuration is sent byte for byte; the model's arguments are added
// after it, and one that names a fixed parameter, however spelt, is
// refused before the gate (Validate) and by the executor.
func TestHTTPFixedQueryIsNeverReplaced(t *testing.T) {
	srv := queryEcho(t)
	tb := newToolbox(t, []plan.Tool{httpTool("profile", srv.URL+"/v1/profile?user=alice&scope=public&tag=a;b&sig=x%2By", "GET")}, nil, Options{})
	r, err := tb.Call(context.Background(), approve(t, tb, "profile", `{"fields":"name email","limit":12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "user=alice&scope=public&tag=a;b&sig=x%2By&fields=name+email&limit=12345678901234567890"; r.Content != want {
		t.Errorf("query %q, want %q", r.Content, want)
	}
	for _, args := range []string{
		`{"user":"admin"}`, `{"scope":"private"}`, `{"User":"admin"}`, `{" user ":"admin"}`,
		`{"user[]":"admin"}`, `{"scope[0]":"private"}`, `{"tag":"x"}`, `{"sig":"forged"}`,
	} {
		err := tb.Validate("profile", []byte(args))
		f := wantKind(t, err, InvalidArguments)
		if !strings.Contains(f.Error(), "which the tool's URL fixes") {
			t.Errorf("%s: %v", args, err)
		}
		// A policy's modify could hand the executor such arguments after
		// Validate: the executor refuses them too.
		_, err = tb.call(context.Background(), "profile", []byte(args), 0)
		wantKind(t, err, InvalidArguments)
	}
}

// TestHTTPBodyMethodsKeepTheQuery: a POST sends its arguments in the body,
// so they cannot touch the query, and nothing is refused.
func TestHTTPBodyMethodsKeepTheQuery(t *testing.T) {
	srv := queryEcho(t)
	tb := newToolbox(t, []plan.Tool{httpTool("post", srv.URL+"?user=alice", "POST")}, nil, Options{})
	if err := tb.Validate("post", []byte(`{"user":"admin"}`)); err != nil {
		t.Fatalf("a body argument named like a query parameter: %v", err)
	}
	r, err := tb.Call(context.Background(), approve(t, tb, "post", `{"user":"admin"}`))
	if err != nil || r.Content != "user=alice" {
		t.Errorf("%+v %v", r, err)
	}
}

// TestHTTPURLIsResolvedAsAURL: a deferred URL goes through ResolveURL,
// which escapes each interpolated value; Resolve is the fallback.
func TestHTTPURLIsResolvedAsAURL(t *testing.T) {
	srv := queryEcho(t)
	tool := httpTool("find", "", "GET")
	tool.Executor.HTTP.URL = plan.String{Deferred: &plan.Expr{Source: `"` + srv.URL + `?key=${env("KEY")}"`}}
	var asURL, plain int
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{
		Resolve:    func(plan.String) (string, error) { plain++; return srv.URL + "?key=a+b", nil },
		ResolveURL: func(plan.String) (string, error) { asURL++; return srv.URL + "?key=a%2Bb", nil },
	})
	r, err := tb.Call(context.Background(), approve(t, tb, "find", `{"q":"x"}`))
	if err != nil || r.Content != "key=a%2Bb&q=x" || asURL == 0 || plain != 0 {
		t.Errorf("%+v %v (ResolveURL %d, Resolve %d)", r, err, asURL, plain)
	}
}

func TestFixedQueryNames(t *testing.T) {
	got := fixedQueryNames("a=1&B=2;c%5B%5D=3&&=4&d&%zz=5")
	want := []string{"a", "b", "c", "", "d", "%zz"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q, want %q", got, want)
	}
}
