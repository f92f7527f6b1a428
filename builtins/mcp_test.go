package builtins

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/plan"
)

// TestMain doubles as an MCP server: with SYMBI_TEST_MCP_SERVER=stdio the
// test binary serves testMCPServer on stdin/stdout, so the stdio transport
// is tested against a real process.
func TestMain(m *testing.M) {
	if os.Getenv("SYMBI_TEST_MCP_SERVER") == "stdio" {
		if f := os.Getenv("PIDFILE"); f != "" {
			os.WriteFile(f, []byte(fmt.Sprintln(os.Getpid())), 0o644)
		}
		// The slow tool says on stderr that it started: the toolbox keeps
		// the tail of a server's stderr, so a test can wait for it.
		started := func() { fmt.Fprintln(os.Stderr, slowStarted) }
		if err := testMCPServer(nil, started).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type greetIn struct {
	Name string `json:"name"`
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

const slowStarted = "slow: started"

// testMCPServer is built with the same SDK: tools with each kind of
// annotation, one that fails, one that never answers, and one whose name
// collides with a builtin.
//
// The one that never answers ("slow") calls started, then waits until its
// request is cancelled or release is closed. Its cancellation comes from the
// client's notifications/cancelled, which the SDK sends on its own goroutine
// and on a best-effort basis: it can arrive before the call it cancels, or
// not be sent because the client is already closing. Until the handler
// returns, the SDK server's session Close, and so an HTTP server's DELETE
// and httptest.Server.Close, wait for it: release is how a test ends it.
func testMCPServer(release <-chan struct{}, started func()) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "symbi-test", Version: "1"}, nil)
	yes := true
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return textResult("hello, " + in.Name), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("wiped"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "note"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("noted"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "boom"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom failed on purpose"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			started()
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-release:
				return nil, nil, errors.New("released")
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "calculator", Description: "shadowed by the builtin"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("server calculator"), nil, nil
		})
	return s
}

func stdioServer(t testing.TB) plan.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return plan.MCPServer{
		Address: "mcp_server.inproc",
		Command: []plan.String{plan.Lit(exe), plan.Lit("-test.run=^$")},
		Env:     map[string]plan.String{"SYMBI_TEST_MCP_SERVER": plan.Lit("stdio")},
		Effect:  "write",
		Timeout: plan.Duration(20 * time.Second),
	}
}

// httpMCPServer serves testMCPServer over streamable HTTP. Its slow tool is
// released when a session is deleted (like a server that stops a session's
// work when the session ends) and at the latest when the test ends, before
// ts.Close waits for every handler; otherwise a lost cancellation would
// leave ts.Close waiting forever. started, if not nil, hears of each slow
// call.
func httpMCPServer(t testing.TB) plan.MCPServer {
	s, _ := httpMCPServerStarted(t)
	return s
}

func httpMCPServerStarted(t testing.TB) (plan.MCPServer, <-chan struct{}) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	started := make(chan struct{}, 1)
	srv := testMCPServer(release, func() {
		select {
		case started <- struct{}{}:
		default:
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			free()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(free) // cleanups run last-in first-out: this one before ts.Close
	return plan.MCPServer{Address: "mcp_server.remote", URL: plan.Lit(ts.URL), Effect: "write", Timeout: plan.Duration(20 * time.Second)}, started
}

func TestMCPServers(t *testing.T) {
	for name, server := range map[string]func(testing.TB) plan.MCPServer{"stdio": stdioServer, "streamable_http": httpMCPServer} {
		t.Run(name, func(t *testing.T) {
			s := server(t)
			short := strings.TrimPrefix(s.Address, "mcp_server.")
			tb := newToolbox(t, []plan.Tool{builtinTool("calculator")}, []plan.MCPServer{s}, Options{})
			effects := map[string]string{}
			for _, info := range tb.Tools() {
				effects[info.Name] = info.Effect
				if info.Name != "calculator" && info.Source != s.Address {
					t.Errorf("%s: source %q", info.Name, info.Source)
				}
			}
			// The server block says write: greet's readOnlyHint cannot
			// lower that floor.
			want := map[string]string{
				"calculator": "none", "greet": "write", "wipe": "destructive", "note": "write", "boom": "write", "slow": "write",
				short + "__calculator": "write",
			}
			for n, e := range want {
				if effects[n] != e {
					t.Errorf("tool %s: effect %q, want %q (have %v)", n, effects[n], e, effects)
				}
			}
			ctx := context.Background()
			r, err := tb.Call(ctx, approve(t, tb, "greet", `{"name":"Ada"}`))
			if err != nil || r.Content != "hello, Ada" || r.Tool != "greet" {
				t.Errorf("greet: %+v %v", r, err)
			}
			r, err = tb.Call(ctx, approve(t, tb, short+"__calculator", `{}`))
			if err != nil || r.Content != "server calculator" {
				t.Errorf("renamed tool: %+v %v", r, err)
			}
			r, err = tb.Call(ctx, approve(t, tb, "calculator", `{"expression":"1+1"}`))
			if err != nil || r.Content != "2" {
				t.Errorf("builtin keeps its name: %+v %v", r, err)
			}
			_, err = tb.Call(ctx, approve(t, tb, "boom", `{}`))
			if f := wantKind(t, err, Error); !strings.Contains(f.Error(), "boom failed on purpose") {
				t.Errorf("boom: %v", err)
			}
			// The server's schema is checked before the gate.
			err = tb.Validate("greet", []byte(`{"name":5}`))
			wantKind(t, err, InvalidArguments)

			tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			_, err = tb.Call(tctx, approve(t, tb, "slow", `{}`))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("slow: %v", err)
			}
			// The session survives a cancelled call.
			if _, err := tb.Call(ctx, approve(t, tb, "note", `{}`)); err != nil {
				t.Errorf("after a cancelled call: %v", err)
			}
		})
	}
}

// TestMCPCloseEndsACallInFlight closes the toolbox while a call with no
// deadline waits on a server that never answers: the SDK's Close waits for
// outstanding calls, so before close cancelled them it never returned.
func TestMCPCloseEndsACallInFlight(t *testing.T) {
	for name, server := range map[string]func(testing.TB) (plan.MCPServer, func(*Toolbox) error){
		"stdio": func(t testing.TB) (plan.MCPServer, func(*Toolbox) error) {
			return stdioServer(t), func(tb *Toolbox) error {
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if strings.Contains(tb.sessions[0].stderr.String(), slowStarted) {
						return nil
					}
				}
				return errors.New("the slow tool did not start within 10s")
			}
		},
		"streamable_http": func(t testing.TB) (plan.MCPServer, func(*Toolbox) error) {
			s, started := httpMCPServerStarted(t)
			return s, func(*Toolbox) error {
				select {
				case <-started:
					return nil
				case <-time.After(10 * time.Second):
					return errors.New("the slow tool did not start within 10s")
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, waitStarted := server(t)
			s.Timeout = 0 // no call timeout: only Close can end the call
			tb, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			called := make(chan error, 1)
			go func() {
				_, err := tb.Call(context.Background(), approve(t, tb, "slow", `{}`))
				called <- err
			}()
			if err := waitStarted(tb); err != nil {
				tb.Close()
				t.Fatal(err)
			}
			closed := make(chan error, 1)
			go func() { closed <- tb.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Close still waiting after 30s")
			}
			select {
			case err := <-called:
				if f := wantKind(t, err, Transport); !errors.Is(f, mcp.ErrConnectionClosed) {
					t.Errorf("call in flight: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the call is still running after Close")
			}
			_, err = tb.Call(context.Background(), approve(t, tb, "note", `{}`))
			if f := wantKind(t, err, Transport); !errors.Is(f, mcp.ErrConnectionClosed) {
				t.Errorf("call after Close: %v", err)
			}
		})
	}
}

func TestMCPToolBlockWrapsAServerTool(t *testing.T) {
	s := httpMCPServer(t)
	tool := plan.Tool{Address: "tool.hello", Description: "Say hello", Executor: plan.Executor{Kind: "mcp", MCP: &plan.MCPExec{Server: s.Address, Tool: "greet"}}}
	tb := newToolbox(t, []plan.Tool{tool}, []plan.MCPServer{s}, Options{})
	info, _ := tb.Info("hello")
	// greet's readOnlyHint does not lower its server's effect (write).
	if info.Effect != "write" || !strings.Contains(string(info.Parameters), `"name"`) || info.Source != "tool.hello" {
		t.Errorf("info %+v", info)
	}
	r, err := tb.Call(context.Background(), approve(t, tb, "hello", `{"name":"Bob"}`))
	if err != nil || r.Content != "hello, Bob" {
		t.Errorf("%+v %v", r, err)
	}
	tool.Executor.MCP.Tool = "nope"
	_, err = NewToolbox(context.Background(), []plan.Tool{tool}, []plan.MCPServer{s}, Options{})
	if err == nil || !strings.Contains(err.Error(), `has no tool "nope"`) {
		t.Errorf("error %v", err)
	}
}

// A tool block may wrap a tool of a server its agent does not list: the
// server is connected for the block alone (Options.WrappedServers), and
// its other tools do not join.
func TestMCPWrappedServerOnly(t *testing.T) {
	s := httpMCPServer(t)
	tool := plan.Tool{Address: "tool.hello", Description: "Say hello", Executor: plan.Executor{Kind: "mcp", MCP: &plan.MCPExec{Server: s.Address, Tool: "greet"}}}
	tb := newToolbox(t, []plan.Tool{tool}, nil, Options{WrappedServers: []plan.MCPServer{s}})
	if names := tb.Names(); !slices.Equal(names, []string{"hello"}) {
		t.Errorf("tools %v, want the wrapping block alone", names)
	}
	if info, _ := tb.Info("hello"); info.Server != s.Address || info.ServerTool != "greet" {
		t.Errorf("info %+v", info)
	}
	if r, err := tb.Call(context.Background(), approve(t, tb, "hello", `{"name":"Ann"}`)); err != nil || r.Content != "hello, Ann" {
		t.Errorf("%+v %v", r, err)
	}
	// Listed as well, the server joins whole, connected once.
	tb = newToolbox(t, []plan.Tool{tool}, []plan.MCPServer{s}, Options{WrappedServers: []plan.MCPServer{s}})
	if names := tb.Names(); !slices.Contains(names, "greet") || len(tb.sessions) != 1 {
		t.Errorf("tools %v over %d sessions", names, len(tb.sessions))
	}
}

func TestMCPStdioServerIsStoppedByClose(t *testing.T) {
	tb, err := NewToolbox(context.Background(), nil, []plan.MCPServer{stdioServer(t)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := tb.sessions[0].cmd.Process.Pid
	if processGone(pid) {
		t.Fatal("server not running")
	}
	if err := tb.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("server %d still running after Close", pid)
	}
}

func TestMCPServerThatFailsToStart(t *testing.T) {
	s := plan.MCPServer{Address: "mcp_server.bad", Command: []plan.String{plan.Lit("sh"), plan.Lit("-c"), plan.Lit("echo cannot start >&2; exit 1")}, Timeout: plan.Duration(10 * time.Second)}
	_, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{})
	wantKind(t, err, Transport)
	if !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("error does not show the server's stderr: %v", err)
	}
}

// TestMCPFilesystemServerFromNPM runs the real @modelcontextprotocol/server-filesystem,
// installed by .ci/run (npm ci in testdata/mcp).
func TestMCPFilesystemServerFromNPM(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; CI installs it")
	}
	script := filepath.Join(testdataDir(t), "mcp", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Skip("the npm MCP server is not installed; run: (cd testdata/mcp && npm ci --no-audit --no-fund)")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the filesystem server\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	s := plan.MCPServer{
		Address: "mcp_server.fs",
		Command: []plan.String{plan.Lit(node), plan.Lit(script), plan.Lit(dir)},
		Effect:  "read",
		Timeout: plan.Duration(30 * time.Second),
	}
	tb := newToolbox(t, []plan.Tool{builtinTool("read_file")}, []plan.MCPServer{s}, Options{Workspace: dir})
	names := tb.Names()
	// read_file is taken by the configured builtin; write_file is a
	// builtin's name, reserved even though the agent has no such builtin.
	for _, want := range []string{"fs__read_file", "read_text_file", "list_directory", "fs__write_file"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing from %v", want, names)
		}
	}
	if info, _ := tb.Info("list_directory"); info.Effect != "read" {
		t.Errorf("list_directory effect %q (readOnlyHint)", info.Effect)
	}
	if info, _ := tb.Info("fs__write_file"); info.Effect != "destructive" {
		t.Errorf("write_file effect %q (destructiveHint)", info.Effect)
	}
	ctx := context.Background()
	path := filepath.Join(dir, "hello.txt")
	r, err := tb.Call(ctx, approve(t, tb, "fs__read_file", fmt.Sprintf(`{"path":%q}`, path)))
	if err != nil || !strings.Contains(r.Content, "hello from the filesystem server") {
		t.Errorf("read_file: %+v %v", r, err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "read_text_file", fmt.Sprintf(`{"path":%q}`, path)))
	if err != nil || !strings.Contains(r.Content, "hello from the filesystem server") {
		t.Errorf("read_text_file: %+v %v", r, err)
	}
	r, err = tb.Call(ctx, approve(t, tb, "list_directory", fmt.Sprintf(`{"path":%q}`, dir)))
	if err != nil || !strings.Contains(r.Content, "[FILE] hello.txt") || !strings.Contains(r.Content, "[DIR] sub") {
		t.Errorf("list_directory: %+v %v", r, err)
	}
	// Outside its allowed directory the server refuses: an error observation.
	_, err = tb.Call(ctx, approve(t, tb, "read_text_file", `{"path":"/etc/hostname"}`))
	wantKind(t, err, Error)
	// The builtin read_file kept its name.
	r, err = tb.Call(ctx, approve(t, tb, "read_file", `{"path":"hello.txt"}`))
	if err != nil || !strings.HasPrefix(r.Content, "hello from") {
		t.Errorf("builtin read_file: %+v %v", r, err)
	}
	pid := tb.sessions[0].cmd.Process.Pid
	if err := tb.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if !processGone(pid) {
		t.Errorf("node server %d still running after Close", pid)
	}
}

func TestFailedToolboxStopsItsServers(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pids")
	s := stdioServer(t)
	s.Env["PIDFILE"] = plan.Lit(pidfile)
	_, err := NewToolbox(context.Background(), []plan.Tool{builtinTool("shell")}, []plan.MCPServer{s}, Options{})
	if err == nil {
		t.Fatal("a toolbox with an unknown builtin was built")
	}
	waitGone(t, pidfile, 1)
}

func TestMCPURLStaysOutOfErrors(t *testing.T) {
	s := plan.MCPServer{Address: "mcp_server.x", URL: plan.String{Deferred: &plan.Expr{Source: `env("MCP_URL")`}}, Timeout: plan.Duration(10 * time.Second)}
	resolve := func(plan.String) (string, error) { return "http://127.0.0.1:1/mcp?key=hunter2", nil }
	_, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{Resolve: resolve})
	wantKind(t, err, Transport)
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "<url of mcp_server.x>") {
		t.Errorf("error %v", err)
	}
}

// everythingServer is the reference "everything" MCP server from npm
// (testdata/mcp), skipping the test when node or the server is missing.
func everythingServer(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; CI installs it")
	}
	script = filepath.Join(testdataDir(t), "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Skip("the npm MCP servers are not installed; run: (cd testdata/mcp && npm ci --no-audit --no-fund)")
	}
	return node, script
}

// startEverythingHTTP runs the everything server over streamable HTTP on
// a free loopback port until the test ends.
func startEverythingHTTP(t *testing.T, node, script string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the everything server ended before it listened")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the everything server did not start listening")
	}
	return "http://127.0.0.1:" + port + "/mcp"
}

// The reference everything server marks simulate-research-query
// execution.taskSupport "required": over stdio and streamable HTTP alike
// the toolbox does not offer it (every plain call fails with "requires
// task augmentation") and says why in Withheld, while the server's other
// tools are offered and work. A tool block that wraps it is withheld too.
func TestMCPTaskRequiredToolsAreWithheld(t *testing.T) {
	node, script := everythingServer(t)
	servers := map[string]func(t *testing.T) plan.MCPServer{
		"stdio": func(t *testing.T) plan.MCPServer {
			return plan.MCPServer{Address: "mcp_server.everything", Command: []plan.String{plan.Lit(node), plan.Lit(script), plan.Lit("stdio")}, Effect: "read", Timeout: plan.Duration(30 * time.Second)}
		},
		"streamable_http": func(t *testing.T) plan.MCPServer {
			return plan.MCPServer{Address: "mcp_server.everything", URL: plan.Lit(startEverythingHTTP(t, node, script)), Effect: "read", Timeout: plan.Duration(30 * time.Second)}
		},
	}
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			srv := server(t)
			wrap := plan.Tool{Address: "tool.research", Description: "research", Executor: plan.Executor{Kind: "mcp", MCP: &plan.MCPExec{Server: srv.Address, Tool: "simulate-research-query"}}, Effect: "read"}
			tb := newToolbox(t, []plan.Tool{wrap}, []plan.MCPServer{srv}, Options{})
			names := tb.Names()
			if slices.Contains(names, "simulate-research-query") || slices.Contains(names, "research") {
				t.Errorf("a tool that requires tasks is offered: %v", names)
			}
			if !slices.Contains(names, "echo") || !slices.Contains(names, "get-sum") {
				t.Errorf("the server's other tools are missing: %v", names)
			}
			want := []Withheld{
				{Name: "simulate-research-query", Source: "tool.research", Reason: taskRequired},
				{Name: "simulate-research-query", Source: "mcp_server.everything", Reason: taskRequired},
			}
			if diff := cmp.Diff(want, tb.Withheld()); diff != "" {
				t.Errorf("withheld (-want +got):\n%s", diff)
			}
			r, err := tb.Call(context.Background(), approve(t, tb, "echo", `{"message":"hi"}`))
			if err != nil || !strings.Contains(r.Content, "hi") {
				t.Errorf("echo: %q %v", r.Content, err)
			}
		})
	}
}
