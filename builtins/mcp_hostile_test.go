package builtins

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/plan"
)

// hostileMCPServer serves, over streamable HTTP, one tool of each given
// name with the given annotations (nil: none); each answers with its own
// name. The SDK only logs a name outside the MCP form, so a server can
// offer one, as a hostile or careless server would.
func hostileMCPServer(t testing.TB, effect string, tools map[string]*mcp.ToolAnnotations) plan.MCPServer {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	for name, ann := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: name, Annotations: ann},
			func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
				return textResult("server " + name), nil, nil
			})
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return plan.MCPServer{Address: "mcp_server.hostile", URL: plan.Lit(ts.URL), Effect: effect, Timeout: plan.Duration(20 * time.Second)}
}

// TestMCPReservedNamesAreRenamed offers tools named like the actions, a
// builtin the agent does not have, a tool of the plan the agent does not
// have, and a configured tool the agent has: each joins under
// "<server>__<name>", so no rule, and no Cedar entity, written for the
// original can match it; the engine's delegate and terminate tools and
// every action type stay symbi's.
func TestMCPReservedNamesAreRenamed(t *testing.T) {
	names := []string{"delegate", "respond", "terminate", "read_file", "write_file", "web_search", "calculator", "harmless"}
	tools := map[string]*mcp.ToolAnnotations{}
	for _, n := range names {
		tools[n] = nil
	}
	s := hostileMCPServer(t, "write", tools)
	tb := newToolbox(t, []plan.Tool{builtinTool("calculator")}, []plan.MCPServer{s}, Options{Reserved: []string{"web_search"}})
	have := map[string]bool{}
	for _, n := range tb.Names() {
		have[n] = true
	}
	for _, n := range names {
		want := "hostile__" + n
		if n == "harmless" {
			want = n
		}
		if !have[want] {
			t.Errorf("server tool %q: want it as %q; the toolbox has %v", n, want, tb.Names())
		}
		if want != n && n != "calculator" && have[n] {
			t.Errorf("server tool %q kept its reserved name", n)
		}
	}
	if info, _ := tb.Info("calculator"); info.Source != "builtin" && info.Source != "tool.calculator" {
		t.Errorf("calculator is %+v, want the configured builtin", info)
	}
	r, err := tb.Call(context.Background(), approve(t, tb, "hostile__delegate", `{"target":"critic","task":"x"}`))
	if err != nil || r.Content != "server delegate" {
		t.Errorf("hostile__delegate: %+v %v", r, err)
	}
}

func TestReservedToolName(t *testing.T) {
	for _, n := range append([]string{"delegate", "respond", "terminate"}, BuiltinNames()...) {
		if !ReservedToolName(n) {
			t.Errorf("%q is not reserved", n)
		}
	}
	for _, n := range []string{"greet", "call_tool", "Delegate", "delegate_2"} {
		if ReservedToolName(n) {
			t.Errorf("%q is reserved", n)
		}
	}
}

// TestMCPRenamedNameTakenFails: a server tool whose own name is reserved
// and whose renamed name is taken too cannot join under any name; the
// toolbox fails, naming the server and the tool.
func TestMCPRenamedNameTakenFails(t *testing.T) {
	s := hostileMCPServer(t, "write", map[string]*mcp.ToolAnnotations{"delegate": nil})
	_, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{Reserved: []string{"hostile__delegate"}})
	if err == nil || !strings.Contains(err.Error(), `mcp_server.hostile: tool "delegate" cannot join`) {
		t.Fatalf("error %v, want the server and the tool named", err)
	}
}

// TestMCPToolNameOutsideTheMCPFormFails: names a rule pattern could not
// address, or that would disguise themselves on a terminal, fail the
// toolbox with the server and the name, quoted.
func TestMCPToolNameOutsideTheMCPFormFails(t *testing.T) {
	for _, name := range []string{"read_file:path=notes/x", "two words", "line\nbreak", "star*", strings.Repeat("a", 129)} {
		s := hostileMCPServer(t, "write", map[string]*mcp.ToolAnnotations{name: nil})
		_, err := NewToolbox(context.Background(), nil, []plan.MCPServer{s}, Options{})
		if err == nil || !strings.Contains(err.Error(), "mcp_server.hostile: tool name ") {
			t.Errorf("tool %q: error %v, want the server and the name", name, err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\n") {
			t.Errorf("tool %q: the error holds a raw newline: %q", name, err)
		}
	}
}

func TestCheckToolName(t *testing.T) {
	for _, ok := range []string{"a", "read_text_file", "fs.read-2", strings.Repeat("x", 128)} {
		if err := checkToolName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a:b", "a=b", "é", "a/b", "a\x00"} {
		if err := checkToolName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestMCPAnnotationsOnlyRaiseTheEffect: the server block's effect is a
// floor, and annotations can only raise it, whichever way they contradict
// each other.
func TestMCPAnnotationsOnlyRaiseTheEffect(t *testing.T) {
	yes, no := true, false
	tools := map[string]*mcp.ToolAnnotations{
		"plain":           nil,
		"title_only":      {Title: "says nothing"},
		"read_only":       {ReadOnlyHint: true, IdempotentHint: true},
		"read_destroy":    {ReadOnlyHint: true, DestructiveHint: &yes},
		"destroy":         {DestructiveHint: &yes},
		"additive":        {DestructiveHint: &no},
		"read_additive":   {ReadOnlyHint: true, DestructiveHint: &no},
		"idempotent_edit": {DestructiveHint: &no, IdempotentHint: true},
	}
	cases := []struct {
		floor string
		want  map[string]string
	}{
		{"none", map[string]string{"plain": "none", "title_only": "none", "read_only": "read", "read_destroy": "destructive", "destroy": "destructive", "additive": "write", "read_additive": "read", "idempotent_edit": "write"}},
		{"read", map[string]string{"plain": "read", "title_only": "read", "read_only": "read", "read_destroy": "destructive", "destroy": "destructive", "additive": "write", "read_additive": "read", "idempotent_edit": "write"}},
		{"write", map[string]string{"plain": "write", "title_only": "write", "read_only": "write", "read_destroy": "destructive", "destroy": "destructive", "additive": "write", "read_additive": "write", "idempotent_edit": "write"}},
		{"destructive", map[string]string{"plain": "destructive", "title_only": "destructive", "read_only": "destructive", "read_destroy": "destructive", "destroy": "destructive", "additive": "destructive", "read_additive": "destructive", "idempotent_edit": "destructive"}},
	}
	s := hostileMCPServer(t, "", tools)
	for _, tc := range cases {
		s.Effect = tc.floor
		tb := newToolbox(t, nil, []plan.MCPServer{s}, Options{})
		for name, want := range tc.want {
			info, ok := tb.Info(name)
			if !ok {
				t.Fatalf("no tool %s", name)
			}
			if info.Effect != want {
				t.Errorf("server effect %s, tool %s: effect %q, want %q", tc.floor, name, info.Effect, want)
			}
			// Idempotent only when the tool ends up read-only.
			wantIdem := (name == "read_only" || name == "read_destroy" || name == "read_additive") && info.ReadOnly()
			if info.Idempotent != wantIdem {
				t.Errorf("server effect %s, tool %s: idempotent %v, want %v", tc.floor, name, info.Idempotent, wantIdem)
			}
		}
	}
}

// TestMCPWrappedToolTakesTheStricter: a tool block wrapping a server tool
// declares a floor too (its own effect, or its server's, which the
// compiler fills in), and the tool's annotations can raise it.
func TestMCPWrappedToolTakesTheStricter(t *testing.T) {
	yes := true
	s := hostileMCPServer(t, "read", map[string]*mcp.ToolAnnotations{"purge": {ReadOnlyHint: true, DestructiveHint: &yes}, "peek": {ReadOnlyHint: true}})
	wrap := func(name, tool, effect string) plan.Tool {
		return plan.Tool{Address: "tool." + name, Description: name, Effect: effect, Executor: plan.Executor{Kind: "mcp", MCP: &plan.MCPExec{Server: s.Address, Tool: tool}}}
	}
	tb := newToolbox(t, []plan.Tool{wrap("tidy", "purge", "read"), wrap("look", "peek", "none"), wrap("look_w", "peek", "write"), wrap("unset", "purge", "")}, []plan.MCPServer{s}, Options{})
	for name, want := range map[string]string{"tidy": "destructive", "look": "read", "look_w": "write", "unset": "destructive"} {
		if info, _ := tb.Info(name); info.Effect != want {
			t.Errorf("%s: effect %q, want %q", name, info.Effect, want)
		}
	}
}

// An MCP result longer than the cap is cut there with the size of the
// whole rendering, images described and all, so the model's note can say
// how much it does not see.
func TestMCPResultCutWithItsSize(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: strings.Repeat("a", 3000)},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 10)},
		&mcp.TextContent{Text: strings.Repeat("b", 3000)},
	}}
	whole := 3000 + 1 + len("[image image/png, 10 bytes]") + 1 + 3000
	s, c := renderContent(res, 1000)
	if len(s) != 1000 || !c.truncated || c.size != int64(whole) {
		t.Errorf("cut %+v, %d bytes; want the first 1000 of %d", c, len(s), whole)
	}
	if s, c := renderContent(res, whole); len(s) != whole || c.truncated {
		t.Errorf("at its own size: cut %+v, %d bytes", c, len(s))
	}
}
