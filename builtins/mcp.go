package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/symbi-dev/symbi/plan"
)

// mcpSession is one connected MCP server.
type mcpSession struct {
	address string // "mcp_server.fs"
	name    string // "fs"
	srv     plan.MCPServer
	session *mcp.ClientSession // set once by connectMCP
	cmd     *exec.Cmd          // stdio servers only
	stderr  *tailWriter
	tools   []*mcp.Tool
	url     string // the resolved URL of an HTTP server, kept out of messages
	// exec is what the server's tools/list answers said of each tool's
	// execution, which the SDK does not keep (see mcptasks.go).
	exec toolExecution
	// withheld are the server's tools the toolbox does not offer.
	withheld []Withheld
	// argv and dir are how a stdio server was started, for the lock.
	argv []string
	dir  string
	// listChanged is set when the server says its tools changed
	// (notifications/tools/list_changed), until Refresh checks the new
	// list; hidden are the tools on_drift = "hide_tool" keeps from the
	// toolbox.
	listChanged atomic.Bool
	hidden      map[string]bool
	// listed marks a server known from its listing (ServerListing): no
	// process, no session; drifts are what the listing's lock check found.
	listed bool
	drifts []Drift

	// life is cancelled when close begins: calls still in flight end then,
	// because the SDK's Close waits for every outstanding call, and a call
	// without a deadline to a server that never answers would hold it
	// forever.
	life      context.Context
	end       context.CancelFunc
	closeOnce sync.Once
	closeErr  error
}

// scrubbed is an error whose text had the server's URL taken out (it may
// hold a resolved secret); the cause stays reachable for errors.Is/As.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

func (s *mcpSession) scrub(err error) error {
	if err == nil || s.url == "" || !strings.Contains(err.Error(), s.url) {
		return err
	}
	return &scrubbed{msg: strings.ReplaceAll(err.Error(), s.url, "<url of "+s.address+">"), err: err}
}

// connectMCP starts (stdio) or reaches (streamable HTTP) a server and lists
// its tools.
func (tb *Toolbox) connectMCP(ctx context.Context, s plan.MCPServer) (*mcpSession, error) {
	sess := &mcpSession{address: s.Address, name: strings.TrimPrefix(s.Address, "mcp_server."), srv: s}
	sess.life, sess.end = context.WithCancel(context.Background())
	timeout := s.Timeout.Std()
	if timeout <= 0 {
		timeout = plan.DefaultMCPServerTimeout.Std() // a plan made without the compiler
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var transport mcp.Transport
	switch {
	case len(s.Command) > 0:
		argv, err := tb.argv(s.Command)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Address, err)
		}
		env, err := tb.environ(s.Env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Address, err)
		}
		dir := tb.commandDir("", argv)
		sess.argv, sess.dir = argv, dir
		// Not CommandContext: the server lives as long as the toolbox, not
		// as long as the context that created it. Close ends it.
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = env
		tb.launch.prepare(cmd)
		sess.stderr = &tailWriter{max: maxStderr}
		cmd.Stderr = sess.stderr
		cmd.WaitDelay = waitDelay
		sess.cmd = cmd
		transport = &listReadingTransport{
			inner: &launchedTransport{inner: &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, launch: &tb.launch},
			x:     &sess.exec,
		}
	case !s.URL.IsZero():
		u, err := tb.resolveURL(s.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: url: %w", s.Address, err)
		}
		sess.url = u
		hc := *tb.opts.HTTPClient
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &listReadingRoundTripper{base: base, x: &sess.exec}
		transport = &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: true}
	default:
		return nil, fmt.Errorf("%s: neither command nor url", s.Address)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "symbi", Version: "0.1"}, &mcp.ClientOptions{
		// Only noted here: the new list is listed and checked against the
		// lock (Toolbox.Refresh) before anything uses it.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { sess.listChanged.Store(true) },
	})
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		sess.killGroup()
		return nil, fail(Transport, s.Address, fmt.Errorf("connecting: %w%s", sess.scrub(err), sess.stderrSuffix()))
	}
	sess.session = cs
	tools, err := sess.list(cctx)
	if err != nil {
		sess.close()
		return nil, fail(Transport, s.Address, err)
	}
	sess.tools = tools
	return sess, nil
}

// list lists the server's tools.
func (s *mcpSession) list(ctx context.Context) ([]*mcp.Tool, error) {
	timeout := s.srv.Timeout.Std()
	if timeout <= 0 {
		timeout = plan.DefaultMCPServerTimeout.Std()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var tools []*mcp.Tool
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w%s", s.scrub(err), s.stderrSuffix())
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// launchedTransport starts a stdio server through the toolbox's launcher,
// so the server gets the same process group and parent-death signal as a
// command tool. The SDK's transport starts the process in Connect, which
// returns as soon as the process runs; the handshake follows elsewhere.
type launchedTransport struct {
	inner  mcp.Transport
	launch *launcher
}

func (t *launchedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	var conn mcp.Connection
	var err error
	if lerr := t.launch.do(func() { conn, err = t.inner.Connect(ctx) }); lerr != nil {
		return nil, lerr
	}
	return conn, err
}

func (s *mcpSession) stderrSuffix() string {
	if s.stderr == nil {
		return ""
	}
	return stderrSuffix(s.stderr.String())
}

func (s *mcpSession) killGroup() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close ends the calls still in flight (each a transport failure), then
// the session (for stdio: stdin closed, then SIGTERM, then SIGKILL; for
// HTTP: a DELETE the SDK gives 5s), then kills what is left of the server's
// process group: npx and similar launchers leave grandchildren behind
// otherwise. Later calls return the first call's error.
func (s *mcpSession) close() error {
	s.closeOnce.Do(func() {
		s.end()
		var err error
		if s.session != nil {
			err = s.session.Close()
		}
		s.killGroup()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) { // a server killed on the way out is the expected end
			s.closeErr = fmt.Errorf("%s: closing: %w", s.address, s.scrub(err))
		}
	})
	return s.closeErr
}

func (s *mcpSession) tool(name string) *mcp.Tool {
	for _, t := range s.tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func (s *mcpSession) toolNames() []string {
	var out []string
	for _, t := range s.tools {
		out = append(out, t.Name)
	}
	return out
}

// annotatedEffect is what a tool's annotations say it may do, or "" when
// they say nothing: readOnlyHint is read, destructiveHint true is
// destructive, and destructiveHint false on a tool that is not read-only
// (an "additive updates only") is write. A tool that claims both readOnlyHint
// and destructiveHint true gets the stricter claim.
func annotatedEffect(a *mcp.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	e := ""
	if a.ReadOnlyHint {
		e = plan.EffectRead
	}
	switch {
	case a.DestructiveHint == nil:
	case *a.DestructiveHint:
		e = plan.StricterEffect(e, plan.EffectDestructive)
	case !a.ReadOnlyHint:
		e = plan.StricterEffect(e, plan.EffectWrite)
	}
	return e
}

// effectOf is a server tool's effect: the declared effect (the server
// block's, or the wrapping tool block's) is a floor, and the annotations,
// which the server writes and nobody checks, can only raise it. A tool that
// says readOnlyHint under a block that says destructive stays destructive.
func effectOf(a *mcp.ToolAnnotations, declared string) string {
	if declared == "" {
		declared = plan.EffectNone
	}
	return plan.StricterEffect(declared, annotatedEffect(a))
}

// idempotentOf is whether a server tool's annotations make it idempotent:
// idempotentHint or readOnlyHint, and only when its effect ended up none or
// read. For a tool that may change things, a claim that repeating it is
// harmless would loosen what its effect says.
func idempotentOf(a *mcp.ToolAnnotations, effect string) bool {
	if a == nil || (effect != plan.EffectNone && effect != plan.EffectRead) {
		return false
	}
	return a.IdempotentHint || a.ReadOnlyHint
}

// maxToolName is the longest tool name the MCP specification allows.
const maxToolName = 128

// checkToolName refuses a server tool name outside the MCP specification's
// form (1 to 128 of A-Z, a-z, 0-9, _, - and .): a name with a colon, a
// glob character, a space or a control character could not be named by a
// rule pattern, or could disguise itself on an approval prompt.
func checkToolName(name string) error {
	if name == "" || len(name) > maxToolName {
		return fmt.Errorf("tool name %q: want 1 to %d characters", name, maxToolName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("tool name %q: %q is not allowed (only A-Z, a-z, 0-9, _, - and .)", name, r)
		}
	}
	return nil
}

// entries are the server's tools, in the server's order, under their own
// names (NewToolbox renames reserved and taken names). A tool whose name is
// not of the MCP form fails the whole server: it names the server and the
// tool, and no tool of a server that misnames one joins the toolbox.
func (s *mcpSession) entries(now func() time.Time) ([]*entry, error) {
	var out []*entry
	s.withheld = nil
	for _, t := range s.tools {
		if err := checkToolName(t.Name); err != nil {
			return nil, fmt.Errorf("%s: %w", s.address, err)
		}
		if why := s.withheldTool(t.Name); why != "" {
			s.withheld = append(s.withheld, Withheld{Name: t.Name, Source: s.address, Reason: why})
			continue
		}
		params, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("%s: tool %s: schema: %w", s.address, t.Name, err)
		}
		schema, err := compileSchema(params)
		if err != nil {
			return nil, fmt.Errorf("%s: tool %s: %w", s.address, t.Name, err)
		}
		effect := effectOf(t.Annotations, s.srv.Effect)
		info := Info{
			Name:        t.Name,
			Description: t.Description,
			Parameters:  params,
			Effect:      effect,
			Idempotent:  idempotentOf(t.Annotations, effect),
			Source:      s.address,
			Server:      s.address,
			ServerTool:  t.Name,
		}
		out = append(out, &entry{
			info:       info,
			schema:     schema,
			run:        s.callRun(t.Name),
			timeout:    s.srv.Timeout.Std(),
			maxOutput:  mcpMaxOutputBytes,
			keyed:      true,
			breaker:    newBreakerOf(s.srv.CircuitBreaker, now),
			server:     s,
			definition: definitionDigest(t),
		})
	}
	return out, nil
}

// callRun calls one of the server's tools. A tool-level error (isError) is
// an error failure with the server's message; a JSON-RPC error is error
// (invalid_arguments for invalid params); a broken connection, or a session
// closed during the call, is transport.
func (s *mcpSession) callRun(tool string) runFunc {
	return func(ctx context.Context, args json.RawMessage, limit int) (string, cut, error) {
		if s.life.Err() != nil {
			return "", cut{}, fail(Transport, "", fmt.Errorf("%s is closed: %w", s.address, mcp.ErrConnectionClosed))
		}
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.life, cancel)()
		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		if key := idempotencyKeyOf(ctx); key != "" {
			params.Meta = mcp.Meta{IdempotencyMeta: key}
		}
		for k, v := range traceContext(ctx) {
			if params.Meta == nil {
				params.Meta = mcp.Meta{}
			}
			params.Meta[k] = v // traceparent, tracestate: the keys MCP's _meta carries them under
		}
		res, err := s.session.CallTool(cctx, params)
		err = s.scrub(err)
		if err != nil {
			var we *jsonrpc.Error
			switch {
			case ctx.Err() != nil:
				return "", cut{}, fail(Timeout, "", err)
			case s.life.Err() != nil:
				return "", cut{}, fail(Transport, "", fmt.Errorf("%s was closed during the call: %w", s.address, mcp.ErrConnectionClosed))
			case errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams:
				return "", cut{}, fail(InvalidArguments, "", err)
			case errors.As(err, &we):
				return "", cut{}, fail(Error, "", err)
			default:
				return "", cut{}, fail(Transport, "", fmt.Errorf("%w%s", err, s.stderrSuffix()))
			}
		}
		content, c := renderContent(res, limit)
		if res.IsError {
			return "", cut{}, fail(Error, "", errors.New(content))
		}
		return content, c, nil
	}
}

// renderContent turns an MCP result into text for the model: text parts as
// they are, other parts described, structured content as JSON when there is
// nothing else. Capped at limit bytes; the cut has the size of the whole
// rendering.
func renderContent(res *mcp.CallToolResult, limit int) (string, cut) {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
			}
		default:
			raw, _ := json.Marshal(c)
			b.Write(raw)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		b.Write(raw)
	}
	s := b.String()
	if len(s) > limit {
		return cutUTF8(s[:limit]), cutAt(int64(len(s)))
	}
	return s, cut{}
}
