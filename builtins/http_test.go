package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/symbi-dev/symbi/plan"
)

func httpTool(name, url, method string) plan.Tool {
	return plan.Tool{
		Address:  "tool." + name,
		Executor: plan.Executor{Kind: "http", HTTP: &plan.HTTPExec{URL: plan.Lit(url), Method: method}},
		Timeout:  plan.Duration(5 * time.Second),
	}
}

func TestHTTPSendsJSONAndResolvesHeadersAtCallTime(t *testing.T) {
	var gotBody, gotAuth, gotType string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotAuth, gotType = string(b), r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		io.WriteString(w, `{"name":"Ada"}`)
	}))
	defer srv.Close()
	tool := httpTool("lookup", srv.URL+"/lookup", "POST")
	tool.Executor.HTTP.Headers = map[string]plan.String{
		"Authorization": {Deferred: &plan.Expr{Source: `"Bearer ${env("DIR_TOKEN")}"`}},
	}
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{Resolve: func(plan.String) (string, error) { return "Bearer s3cret", nil }})
	r, err := tb.Call(context.Background(), approve(t, tb, "lookup", `{"id": 7}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != `{"name":"Ada"}` || gotBody != `{"id": 7}` || gotAuth != "Bearer s3cret" || gotType != "application/json" {
		t.Errorf("content %q body %q auth %q type %q", r.Content, gotBody, gotAuth, gotType)
	}
}

func TestHTTPGetPutsArgumentsInTheQuery(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.RawQuery)
	}))
	defer srv.Close()
	tb := newToolbox(t, []plan.Tool{httpTool("find", srv.URL, "GET")}, nil, Options{})
	r, err := tb.Call(context.Background(), approve(t, tb, "find", `{"q":"a b","n":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "n=3&q=a+b" {
		t.Errorf("query %q", r.Content)
	}
}

func TestHTTPStatusMapping(t *testing.T) {
	cases := []struct {
		status     int
		kind       FailureKind
		retryAfter time.Duration
	}{
		{429, RateLimited, 7 * time.Second},
		{408, Timeout, 0},
		{504, Timeout, 0},
		{500, Transport, 0},
		{502, Transport, 0},
		{503, Transport, 0},
		{404, Error, 0},
		{400, Error, 0},
		{401, Error, 0},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.status == 429 {
				w.Header().Set("Retry-After", "7")
			}
			w.WriteHeader(c.status)
			io.WriteString(w, strings.Repeat("detail ", 1000))
		}))
		tb := newToolbox(t, []plan.Tool{httpTool("api", srv.URL, "POST")}, nil, Options{})
		_, err := tb.Call(context.Background(), approve(t, tb, "api", `{}`))
		f := wantKind(t, err, c.kind)
		if f.RetryAfter != c.retryAfter {
			t.Errorf("%d: RetryAfter %s, want %s", c.status, f.RetryAfter, c.retryAfter)
		}
		var se *StatusError
		if !errors.As(err, &se) || se.Code != c.status || len(se.Body) > maxErrorBody {
			t.Errorf("%d: status error %v", c.status, err)
		}
		srv.Close()
	}
}

func TestRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if d := retryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d != 90*time.Second {
		t.Errorf("date form: %s", d)
	}
	if d := retryAfter("soon", now); d != 0 {
		t.Errorf("garbage: %s", d)
	}
	if d := retryAfter("99999999999", now); d != 24*time.Hour {
		t.Errorf("huge: %s, want the one-day cap", d)
	}
	if d := retryAfter(now.AddDate(200, 0, 0).Format(http.TimeFormat), now); d != 24*time.Hour {
		t.Errorf("a date centuries ahead: %s, want the one-day cap", d)
	}
}

func TestHTTPConnectionRefusedIsTransport(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tb := newToolbox(t, []plan.Tool{httpTool("down", "http://"+addr+"/x?token=secret", "POST")}, nil, Options{})
	_, err = tb.Call(context.Background(), approve(t, tb, "down", `{}`))
	wantKind(t, err, Transport)
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the URL (and what it carries) leaked into the error: %v", err)
	}
}

func TestHTTPSlowServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tool := httpTool("slow", srv.URL, "POST")
	tool.Timeout = plan.Duration(100 * time.Millisecond)
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{})
	_, err := tb.Call(context.Background(), approve(t, tb, "slow", `{}`))
	wantKind(t, err, Timeout)
}

func TestHTTPBodyIsCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 1000; i++ {
			if _, err := io.WriteString(w, strings.Repeat("y", 1024)); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	tool := httpTool("big", srv.URL, "POST")
	tool.MaxOutputBytes = 1000
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{})
	r, err := tb.Call(context.Background(), approve(t, tb, "big", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || len(r.Content) != 1000 {
		t.Errorf("truncated %v, %d bytes", r.Truncated, len(r.Content))
	}
	if r.Size != 0 {
		t.Errorf("a chunked body without Content-Length: size %d, want unknown", r.Size)
	}
}

// A body whose Content-Length says its size is cut with that size known,
// for the model's note.
func TestHTTPBodyCutWithItsContentLength(t *testing.T) {
	body := strings.Repeat("z", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5000")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	tool := httpTool("sized", srv.URL, "POST")
	tool.MaxOutputBytes = 1000
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{})
	r, err := tb.Call(context.Background(), approve(t, tb, "sized", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.Size != 5000 || r.TruncationNote() != "[output truncated at max_output_bytes (1000): the first 1000 of 5000 bytes are shown]" {
		t.Errorf("truncated %v, size %d, note %q", r.Truncated, r.Size, r.TruncationNote())
	}
}

// flakyServer fails on purpose: the handler answers with the statuses in
// script, one per request, then with 200 and "ok".
type flakyServer struct {
	*httptest.Server
	mu     sync.Mutex
	script []int
	calls  int
	bodies []string
}

func newFlakyServer(t testing.TB, script ...int) *flakyServer {
	fs := &flakyServer{script: script}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fs.mu.Lock()
		fs.calls++
		fs.bodies = append(fs.bodies, string(b))
		status := 200
		if len(fs.script) > 0 {
			status, fs.script = fs.script[0], fs.script[1:]
		}
		n := fs.calls
		fs.mu.Unlock()
		if status == 429 {
			w.Header().Set("Retry-After", "3")
		}
		w.WriteHeader(status)
		if status == 200 {
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "call": n})
		} else {
			io.WriteString(w, "failing on purpose")
		}
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *flakyServer) set(script ...int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.script = script
}

func (fs *flakyServer) Calls() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.calls
}

func TestHTTPErrorsDoNotShowResolvedSecrets(t *testing.T) {
	srv := newFlakyServer(t, 500)
	deferred := func(src string) plan.String { return plan.String{Deferred: &plan.Expr{Source: src}} }
	secrets := map[string]string{
		`env("BAD_URL")`:  "http://user:hunter2@[::1:bad/",
		`env("GOOD_URL")`: srv.URL + "/?key=hunter2",
		`env("TOKEN")`:    "hunter2",
	}
	resolve := func(s plan.String) (string, error) { return secrets[s.Deferred.Source], nil }
	bad := httpTool("bad", "", "POST")
	bad.Executor.HTTP.URL = deferred(`env("BAD_URL")`)
	good := httpTool("good", "", "POST")
	good.Executor.HTTP.URL = deferred(`env("GOOD_URL")`)
	good.Executor.HTTP.Headers = map[string]plan.String{"X-Token": deferred(`env("TOKEN")`)}
	tb := newToolbox(t, []plan.Tool{bad, good}, nil, Options{Resolve: resolve})
	for _, name := range []string{"bad", "good"} {
		_, err := tb.Call(context.Background(), approve(t, tb, name, `{}`))
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows a secret: %v", name, err)
		}
	}
	failing := httpTool("failing", "", "POST")
	failing.Executor.HTTP.URL = deferred(`env("MISSING")`)
	tb = newToolbox(t, []plan.Tool{failing}, nil, Options{Resolve: func(plan.String) (string, error) { return "", errors.New("MISSING is not set") }})
	_, err := tb.Call(context.Background(), approve(t, tb, "failing", `{}`))
	if err == nil || !strings.Contains(err.Error(), "MISSING is not set") {
		t.Errorf("resolver error: %v", err)
	}
}
