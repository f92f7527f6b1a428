package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/symbi-dev/symbi/lockfile"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
)

// Options are what a Toolbox needs from its surroundings. Everything
// stateful or environmental is passed in, so tests can drive it.
type Options struct {
	// BaseDir is the configuration directory: a command tool's dir and
	// relative argv[0] are resolved against it.
	BaseDir string
	// StateDir holds the dead-letter file; BaseDir/.symbi when empty. Like
	// BaseDir and Workspace, a relative path is taken from the working
	// directory. No builtin file tool can reach it.
	StateDir string
	// Workspace is the root read_file, list_dir and write_file are confined
	// to; BaseDir when empty.
	Workspace string
	// Protected are more paths no builtin file tool may read, list or
	// write, whatever the policies say (the state directory always is): the
	// configuration's files, a saved plan, knowledge stores. ProtectedPaths
	// lists those of a plan.
	Protected []Protected
	// HTTPAllowHosts are the hosts http_get may fetch: exact names or
	// path.Match globs ("*.example.com"), optionally with ":port", compared
	// without regard to case. A tool's own plan.Tool.AllowHosts (allow_hosts
	// in HCL) replaces this list for that tool; this is the list of tools
	// that have none. Empty means none.
	HTTPAllowHosts []string
	// Resolve turns a deferred plan.String (one calling env(), say) into its
	// value at call time. Resolved values are secrets: never log them. Nil
	// resolves only strings known at compile time.
	Resolve func(plan.String) (string, error)
	// ResolveURL is Resolve for a URL (an http tool's, an MCP server's): each
	// value it interpolates is percent-encoded for its place, so a token
	// holding + or & reaches the server as it is (eval.URL in package plan/eval). Resolve is
	// used when nil.
	ResolveURL func(plan.String) (string, error)
	// Redact takes the secrets out of an encoded JSON value that the
	// toolbox writes itself (a dead letter: a failing tool's arguments and
	// stderr) and returns it still valid; nil writes it as it is.
	Redact func(json []byte) []byte
	// Knowledge backs recall_knowledge and store_knowledge; a
	// *knowledge.Store fits.
	Knowledge KnowledgeStore
	// RelevanceThreshold is the least relevance a recalled fact needs (the
	// agent's knowledge.relevance_threshold).
	RelevanceThreshold float64
	// Conventions is the knowledge block's conventions name: recall_knowledge
	// with scope "conventions" reads <dir>/<name>.md and <dir>/<name>/*.md
	// from the given directory up to the workspace root.
	Conventions string
	// Agent is the agent's address, recorded as the source of stored facts.
	Agent string
	// Reserved are names an MCP server's tool may not take as they are,
	// besides the action types (delegate, respond, terminate) and the
	// builtins' names, which are always reserved: the engine passes every
	// tool of the plan, so a server's tool cannot pass for a configured tool
	// of another agent in a policy the agents share.
	Reserved []string
	// Delegate runs another agent for the delegate tool.
	Delegate func(ctx context.Context, target, task string) (string, error)
	// Now and Sleep drive circuit breakers, cached results and backoff.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1) for retry jitter; math/rand when nil.
	Jitter func() float64
	// HTTPClient sends http tool requests and http_get; a client with no
	// overall timeout when nil (each call runs under its own context).
	HTTPClient *http.Client
	// WrappedServers are MCP servers the toolbox connects only for the
	// tool blocks that wrap one of their tools (an agent that lists
	// tool.read_notes but not its server): their own tools do not join.
	// A server also passed to NewToolbox as a server joins whole.
	WrappedServers []plan.MCPServer
	// Observe, when set, is called as each call of a tool starts (each
	// attempt: a retry, a fallback, a re-run after an escalation are calls
	// of their own). The context it returns is the call's, and the tool
	// sees its trace context (an http tool's traceparent header, a command
	// tool's TRACEPARENT); end is called once with the outcome. The engine
	// makes a span of each call.
	Observe func(ctx context.Context, c Call) (context.Context, func(CallEnd))
	// Lock is what the configuration's lock file pins: every server and
	// command tool is checked against it when the toolbox starts, and a
	// server's new tool list (list_changed) before it is used. Nil checks
	// nothing.
	Lock *plan.Lock
	// OnDrift settles a drift of a command tool, and of a server whose
	// plan entry says nothing (plan.Settings.OnDrift); empty:
	// plan.DefaultOnDrift.
	OnDrift string
	// ExecutableCache is the file that remembers executables' digests
	// between runs (lockfile.Hasher); "" digests every executable afresh.
	ExecutableCache string
	// Execute, when set, carries out every call in place of the tool's
	// executor: a durable runtime (package temporal) sends the Execution to
	// a worker, whose toolbox runs it with ExecuteCall. Validation, breakers,
	// recovery and cached results stay here. Every call then carries an
	// idempotency key when the caller set a scope (WithCallScope).
	Execute func(ctx context.Context, x Execution) (Result, error)
	// Go, when set, runs Dispatch's calls at once, at most limit at a time,
	// and returns when every function has returned, in place of the
	// toolbox's own goroutines (a workflow's coroutines).
	Go func(ctx context.Context, limit int, fns []func(context.Context))
	// ListServers, when set, gives the MCP servers' tool lists in place of
	// connecting them: a durable runtime's workflow, which starts no
	// process, asks a worker to connect and list them (Toolbox.Listings)
	// and keeps the answer in its history. Their calls then need Execute.
	ListServers func(ctx context.Context, servers []plan.MCPServer) ([]ServerListing, error)
}

// Info describes one tool as the model and the policies see it.
type Info struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // JSON Schema
	Effect      string          `json:"effect"`               // none | read | write | destructive
	Tags        []string        `json:"tags,omitempty"`
	Idempotent  bool            `json:"idempotent"`
	Approval    string          `json:"approval,omitempty"` // never | policy | always
	Source      string          `json:"source"`             // "tool.x", "builtin", or the mcp_server address
	// Server and ServerTool are the MCP server of a server's tool or of a
	// tool block that wraps one, and the server's own name for the tool
	// (the name may differ: fs__read_file is fs's read_file).
	Server     string `json:"server,omitempty"`
	ServerTool string `json:"server_tool,omitempty"`
}

// ReadOnly reports whether the tool acts on nothing outside itself: its
// effect is none or read.
func (i Info) ReadOnly() bool { return i.Effect == "none" || i.Effect == "read" }

// Result is a tool's successful output.
type Result struct {
	Content   string
	Truncated bool // output reached max_output_bytes and was cut there
	// Limit is the cap a truncated output was cut at, and Size the bytes
	// it had whole, 0 when that is not known (see TruncationNote).
	Limit   int
	Size    int64
	Elapsed time.Duration
	// Tool is the tool that produced Content: a fallback's name when the
	// fallback strategy answered.
	Tool string
	// Cached is set when cached_result answered with an earlier success.
	Cached bool
}

// TruncationNote is what the model reads after an output cut at the
// tool's max_output_bytes, so it does not take the part for the whole:
// how much it sees and how much there was, or that the rest was not read.
// "" when the output was whole.
func (r Result) TruncationNote() string {
	if !r.Truncated {
		return ""
	}
	if r.Size > 0 {
		return fmt.Sprintf("[output truncated at max_output_bytes (%d): the first %d of %d bytes are shown]", r.Limit, len(r.Content), r.Size)
	}
	return fmt.Sprintf("[output truncated at max_output_bytes (%d): the first %d bytes are shown; the tool was stopped there, so the whole size is not known]", r.Limit, len(r.Content))
}

// Outcome is one dispatched call's result or failure.
type Outcome struct {
	Call   policy.Approved
	Result Result
	Err    error
}

// mcpMaxOutputBytes caps the results of an MCP server's tools, which have
// no tool block to set max_output_bytes (docs/tools.md#mcp). A tool block
// that wraps a server tool has its own max_output_bytes, plan's default
// when it sets none.
const mcpMaxOutputBytes = 1 << 20

// runFunc executes one tool. limit is the output cap in bytes.
type runFunc func(ctx context.Context, args json.RawMessage, limit int) (content string, c cut, err error)

// cut says whether a tool's output was cut at its limit (max_output_bytes),
// and how many bytes it had whole: size is 0 when only that it passed the
// limit is known (a command tool is stopped there, an http body without a
// Content-Length is not read to its end).
type cut struct {
	truncated bool
	size      int64
}

// cutAt is the cut of an output of size bytes (0: unknown) at the limit.
func cutAt(size int64) cut { return cut{truncated: true, size: size} }

type entry struct {
	info      Info
	schema    *jsonschema.Resolved
	run       runFunc
	paths     pathArgs // a builtin's path arguments, for Canonical
	timeout   time.Duration
	maxOutput int
	breaker   *breaker
	// check, when set, refuses arguments the schema lets through but the
	// executor must not take (a query parameter the URL fixes); Validate
	// runs it before the gate, the executor again.
	check func(args json.RawMessage) error
	// keyed executors pass the call's idempotency key on to the tool.
	keyed bool
	// server is the MCP server an MCP tool calls; wrapped marks a tool
	// block over one of its tools, which a new tool list does not replace.
	server  *mcpSession
	wrapped bool
	// definition is the digest of a server tool's canonical definition,
	// which an Execution carries to the worker (ExecuteCall).
	definition string
}

// Toolbox holds the tools of one run. It is safe for concurrent use.
type Toolbox struct {
	opts Options
	// toolsMu guards tools, order, drifts and generation: a server's new
	// tool list replaces its entries while calls go on (Refresh).
	toolsMu    sync.RWMutex
	tools      map[string]*entry
	order      []string
	drifts     []Drift
	generation uint64

	sessions     []*mcpSession
	commandTools []plan.Tool // checked against the lock, pinned by symbi lock
	hasher       *lockfile.Hasher
	refreshMu    sync.Mutex // one Refresh at a time: it replaces a server's tools
	cache        *resultCache
	ws           *workspace // the file builtins' root and its protected paths
	launch       launcher

	withheld []Withheld

	mu          sync.Mutex
	llmAttempts map[string]int
	deadMu      sync.Mutex

	validated validatedArgs
}

// NewToolbox connects the MCP servers and prepares every tool: schemas are
// compiled once here. Tool names are plan addresses without "tool."; an MCP
// server's tools keep their own names, or become "<server>__<tool>" when the
// name is reserved (ReservedToolName, Options.Reserved) or taken (by a
// configured tool or an earlier server). Every tool of every server passed
// joins the toolbox (of Options.WrappedServers, only those that tool blocks
// wrap); a server tool whose name is not of the MCP form (see
// checkToolName), or whose renamed name is taken too, fails the toolbox.
// Close stops the servers.
func NewToolbox(ctx context.Context, tools []plan.Tool, servers []plan.MCPServer, opts Options) (_ *Toolbox, err error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepContext
	}
	if opts.Workspace == "" {
		opts.Workspace = opts.BaseDir
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.StateDir == "" {
		opts.StateDir = filepath.Join(opts.BaseDir, plan.DefaultStateDir)
	}
	protected := append([]Protected{{Path: opts.StateDir, What: "the state directory"}}, opts.Protected...)
	tb := &Toolbox{
		opts:        opts,
		tools:       map[string]*entry{},
		cache:       newResultCache(1024),
		ws:          newWorkspace(opts.Workspace, protected),
		llmAttempts: map[string]int{},
		hasher:      &lockfile.Hasher{Cache: opts.ExecutableCache},
	}
	defer func() {
		if err != nil {
			tb.Close() // no server outlives a toolbox that failed to build
		}
	}()
	byServer := map[string]*mcpSession{}
	var listed []*mcpSession
	all := append(slices.Clip(servers), opts.WrappedServers...)
	var fromListing map[string]*mcpSession
	if opts.ListServers != nil && len(all) > 0 {
		var once []plan.MCPServer
		for _, s := range all {
			if !slices.ContainsFunc(once, func(o plan.MCPServer) bool { return o.Address == s.Address }) {
				once = append(once, s)
			}
		}
		if fromListing, err = tb.listServers(ctx, once); err != nil {
			return nil, err
		}
	}
	for i, s := range all {
		if byServer[s.Address] != nil {
			continue
		}
		var sess *mcpSession
		if fromListing != nil {
			sess = fromListing[s.Address]
		} else if sess, err = tb.connectMCP(ctx, s); err != nil {
			return nil, err
		}
		tb.sessions = append(tb.sessions, sess)
		byServer[s.Address] = sess
		if i < len(servers) {
			listed = append(listed, sess)
		}
	}
	for _, t := range tools {
		if t.Executor.Kind == "command" && t.Executor.Command != nil && len(t.Executor.Command.Argv) > 0 {
			tb.commandTools = append(tb.commandTools, t)
		}
	}
	hiddenCommands, err := tb.checkLock()
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		if hiddenCommands[t.Address] {
			continue
		}
		var e *entry
		e, err = tb.newEntry(t, byServer)
		var w *withheldErr
		if errors.As(err, &w) {
			tb.withheld = append(tb.withheld, Withheld{Name: w.tool, Source: t.Address, Reason: w.reason})
			continue
		}
		if errors.Is(err, errHidden) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Address, err)
		}
		if _, dup := tb.tools[e.info.Name]; dup {
			return nil, fmt.Errorf("%s: duplicate tool name %q", t.Address, e.info.Name)
		}
		tb.add(e)
	}
	for _, sess := range listed {
		ents, err := sess.entries(tb.opts.Now)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if sess.hidden[e.info.Name] {
				continue
			}
			own := e.info.Name
			if tb.nameTaken(own) {
				e.info.Name = sess.name + "__" + own
			}
			if tb.nameTaken(e.info.Name) {
				return nil, fmt.Errorf("%s: tool %q cannot join: %q is reserved or taken, and so is %q", sess.address, own, own, e.info.Name)
			}
			tb.add(e)
		}
		tb.withheld = append(tb.withheld, sess.withheld...)
	}
	return tb, nil
}

// Withheld lists the tools of the toolbox's MCP servers that it does not
// offer, and why: tools that require MCP task augmentation, which no call
// symbi can make would run (see mcptasks.go). A tool block that wraps such
// a tool is withheld too, under the block's address.
func (tb *Toolbox) Withheld() []Withheld {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	return slices.Clone(tb.withheld)
}

// checkLock checks every server and command tool against the lock, when
// there is one: drifts that on_drift refuses fail the toolbox, all of them
// in one DriftError; hidden tools are marked on their server (and the
// command tools to leave out returned).
func (tb *Toolbox) checkLock() (map[string]bool, error) {
	if tb.opts.Lock == nil {
		return nil, nil
	}
	var refused []lockfile.Change
	for _, s := range tb.sessions {
		if s.listed {
			// Checked where it was connected; hidden comes with it.
			tb.drifts = append(tb.drifts, s.drifts...)
			continue
		}
		hidden, drifts, ref, err := tb.checkServer(s, false)
		if err != nil {
			return nil, err
		}
		s.hidden = hidden
		tb.drifts = append(tb.drifts, drifts...)
		refused = append(refused, ref...)
	}
	hiddenCommands := map[string]bool{}
	for _, t := range tb.commandTools {
		hide, drifts, ref, err := tb.checkCommand(t)
		if err != nil {
			return nil, err
		}
		hiddenCommands[t.Address] = hide
		tb.drifts = append(tb.drifts, drifts...)
		refused = append(refused, ref...)
	}
	if len(refused) > 0 {
		return nil, &DriftError{LockFile: tb.opts.Lock.File, Changes: refused}
	}
	return hiddenCommands, nil
}

// errHidden: newEntry's tool wraps a server tool that on_drift hides.
var errHidden = errors.New("hidden by on_drift")

// nameTaken reports whether a server's tool may not take name: a tool of
// the toolbox has it, or it is reserved. The caller holds toolsMu, or the
// toolbox is still being built.
func (tb *Toolbox) nameTaken(name string) bool { return tb.nameTakenLocked(name) }

func (tb *Toolbox) nameTakenLocked(name string) bool {
	_, taken := tb.tools[name]
	return taken || ReservedToolName(name) || slices.Contains(tb.opts.Reserved, name)
}

// ReservedToolName reports whether name belongs to symbi rather than to any
// MCP server: an action type (a rule "delegate:target=critic" names the
// delegate action, and the engine turns a call of a tool named delegate or
// terminate into that action) or a builtin's name (a rule written for the
// builtin read_file must never match a server's tool). A server's tool of
// such a name is renamed "<server>__<name>".
func ReservedToolName(name string) bool {
	if plan.ReservedName(name) {
		return true
	}
	_, builtin := builtinSpecs()[name]
	return builtin
}

func (tb *Toolbox) add(e *entry) {
	tb.tools[e.info.Name] = e
	tb.order = append(tb.order, e.info.Name)
}

// newEntry prepares one configured tool.
func (tb *Toolbox) newEntry(t plan.Tool, servers map[string]*mcpSession) (*entry, error) {
	e := &entry{
		info: Info{
			Name:        strings.TrimPrefix(t.Address, "tool."),
			Description: t.Description,
			Parameters:  t.Parameters,
			Effect:      t.Effect,
			Tags:        t.Tags,
			Idempotent:  t.Idempotent,
			Approval:    t.Approval,
			Source:      t.Address,
		},
		timeout:   t.Timeout.Std(),
		maxOutput: t.MaxOutputBytes,
	}
	if e.maxOutput <= 0 {
		// A plan made without the compiler, which fills the default.
		e.maxOutput = plan.DefaultMaxOutputBytes
	}
	switch t.Executor.Kind {
	case "builtin":
		b, ok := builtinSpecs()[t.Executor.Builtin]
		if !ok {
			return nil, fmt.Errorf("unknown builtin %q (have %s)", t.Executor.Builtin, strings.Join(BuiltinNames(), ", "))
		}
		if len(e.info.Parameters) == 0 {
			e.info.Parameters = json.RawMessage(b.schema)
		}
		if e.info.Effect == "" {
			e.info.Effect = b.effect
		}
		if e.info.Description == "" {
			e.info.Description = b.description
		}
		e.run = b.run(tb, t)
		e.paths = b.paths
	case "command":
		if t.Executor.Command == nil {
			return nil, errors.New("command executor without a command block")
		}
		e.run = tb.commandRun(*t.Executor.Command)
		e.keyed = true
	case "http":
		if t.Executor.HTTP == nil {
			return nil, errors.New("http executor without an http block")
		}
		e.run = tb.httpRun(*t.Executor.HTTP)
		e.check = tb.httpCheck(*t.Executor.HTTP)
		e.keyed = true
	case "mcp":
		m := t.Executor.MCP
		if m == nil {
			return nil, errors.New("mcp executor without an mcp block")
		}
		sess := servers[m.Server]
		if sess == nil {
			return nil, fmt.Errorf("mcp server %s was not passed to the toolbox", m.Server)
		}
		if sess.hidden[m.Tool] {
			return nil, errHidden
		}
		mt := sess.tool(m.Tool)
		if mt == nil {
			return nil, fmt.Errorf("%s has no tool %q (it has %s)", m.Server, m.Tool, strings.Join(sess.toolNames(), ", "))
		}
		if why := sess.withheldTool(m.Tool); why != "" {
			return nil, &withheldErr{tool: m.Tool, reason: why}
		}
		if len(e.info.Parameters) == 0 {
			raw, err := json.Marshal(mt.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %s: schema: %w", m.Server, m.Tool, err)
			}
			e.info.Parameters = raw
		}
		if e.info.Description == "" {
			e.info.Description = mt.Description
		}
		// The block's effect (the compiler gives it the server's when the
		// block sets none) is a floor the annotations can only raise.
		declared := e.info.Effect
		if declared == "" {
			declared = sess.srv.Effect
		}
		e.info.Effect = effectOf(mt.Annotations, declared)
		e.info.Server, e.info.ServerTool = m.Server, m.Tool
		e.run = sess.callRun(m.Tool)
		e.keyed = true
		e.server, e.wrapped = sess, true
		e.definition = definitionDigest(mt)
	case "fixed":
		f := t.Executor.Fixed
		if f == nil {
			return nil, errors.New("fixed executor without a fixed block")
		}
		e.run = fixedRun(*f)
	default:
		return nil, fmt.Errorf("unknown executor kind %q", t.Executor.Kind)
	}
	if e.info.Effect == "" {
		e.info.Effect = "none"
	}
	s, err := compileSchema(e.info.Parameters)
	if err != nil {
		return nil, err
	}
	e.schema = s
	e.breaker = newBreakerOf(t.CircuitBreaker, tb.opts.Now)
	return e, nil
}

// fixedRun answers every call with f's output, cut at the tool's output
// limit, or fails it with f's error.
func fixedRun(f plan.FixedExec) runFunc {
	return func(_ context.Context, _ json.RawMessage, limit int) (string, cut, error) {
		if f.Error != "" {
			return "", cut{}, fail(Error, "", errors.New(f.Error))
		}
		if limit > 0 && len(f.Output) > limit {
			for limit > 0 && !utf8.RuneStart(f.Output[limit]) {
				limit--
			}
			return f.Output[:limit], cutAt(int64(len(f.Output))), nil
		}
		return f.Output, cut{}, nil
	}
}

// Tools lists every tool in a stable order: configured tools as given, then
// each server's tools in the server's order.
func (tb *Toolbox) Tools() []Info {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	out := make([]Info, 0, len(tb.order))
	for _, n := range tb.order {
		out = append(out, tb.tools[n].info)
	}
	return out
}

// Names lists the tool names in the order of Tools, for ApplyProfile.
func (tb *Toolbox) Names() []string {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	return append([]string(nil), tb.order...)
}

// entryOf is the tool named name, if the toolbox has it now.
func (tb *Toolbox) entryOf(name string) (*entry, bool) {
	tb.toolsMu.RLock()
	defer tb.toolsMu.RUnlock()
	e, ok := tb.tools[name]
	return e, ok
}

// Info describes one tool.
func (tb *Toolbox) Info(name string) (Info, bool) {
	e, ok := tb.entryOf(name)
	if !ok {
		return Info{}, false
	}
	return e.info, true
}

// TakesIdempotencyKey reports whether the tool passes its call's
// idempotency key on (command, http and MCP tools; see WithCallScope).
func (tb *Toolbox) TakesIdempotencyKey(name string) bool {
	e, ok := tb.entryOf(name)
	return ok && e.keyed
}

// BreakerState reports a tool's circuit breaker state; false when the tool
// has none (its block turned it off).
func (tb *Toolbox) BreakerState(name string) (BreakerState, bool) {
	e, ok := tb.entryOf(name)
	if !ok || e.breaker == nil {
		return "", false
	}
	return e.breaker.State(), true
}

// Validate checks arguments against the tool's JSON Schema; the engine calls
// it before the gate. The error is a *Failure of kind invalid_arguments whose
// message says exactly what is wrong, for the model to correct.
func (tb *Toolbox) Validate(name string, args json.RawMessage) error {
	e, err := tb.lookup(name)
	if err != nil {
		return err
	}
	if err := validateArgs(e.schema, args); err != nil {
		return fail(InvalidArguments, name, err)
	}
	if e.check != nil {
		if err := e.check(args); err != nil {
			return fail(InvalidArguments, name, err)
		}
	}
	tb.validated.add(name, args)
	return nil
}

func (tb *Toolbox) lookup(name string) (*entry, error) {
	e, ok := tb.entryOf(name)
	if !ok {
		msg := fmt.Errorf("%w %q", ErrUnknownTool, name)
		if names := tb.Names(); len(names) > 0 {
			msg = fmt.Errorf("%w %q (available: %s)", ErrUnknownTool, name, strings.Join(names, ", "))
		}
		return nil, fail(InvalidArguments, name, msg)
	}
	return e, nil
}

// Call runs one approved tool call, under the tool's timeout and circuit
// breaker. It is the only way to run a tool. A delegate action runs the
// delegate tool. Every failure is a *Failure.
func (tb *Toolbox) Call(ctx context.Context, call policy.Approved) (Result, error) {
	return tb.callApproved(ctx, call, 0)
}

func (tb *Toolbox) callApproved(ctx context.Context, call policy.Approved, timeout time.Duration) (Result, error) {
	if !call.Valid() {
		return Result{}, fail(Error, "", ErrNotApproved)
	}
	a := call.Action()
	name, args, err := toolCallOf(a)
	if err != nil {
		return Result{}, err
	}
	if e, ok := tb.entryOf(name); ok && (e.keyed || tb.opts.Execute != nil) {
		ctx = withIdempotencyKey(ctx, a.CallID)
	}
	if tb.opts.Observe != nil {
		ctx = context.WithValue(ctx, callIDKey{}, a.CallID)
	}
	return tb.call(ctx, name, args, timeout)
}

func toolCallOf(a policy.Action) (string, json.RawMessage, error) {
	switch a.Type {
	case policy.ToolCall:
		return a.Tool, a.Arguments, nil
	case policy.Delegate:
		b, err := json.Marshal(map[string]string{"target": a.Target, "task": a.Task})
		return "delegate", b, err
	}
	return "", nil, fail(Error, a.Tool, fmt.Errorf("a %s action does not run a tool", a.Type))
}

func (tb *Toolbox) call(ctx context.Context, name string, args json.RawMessage, timeout time.Duration) (res Result, err error) {
	e, err := tb.lookup(name)
	if err != nil {
		return Result{}, err
	}
	// Checked again here because a policy's modify decision may have
	// rewritten the arguments after the engine's Validate, and Call may be
	// reached without Validate at all. Arguments byte-identical to ones
	// Validate accepted for this tool are not parsed and checked a second
	// time (see validatedArgs): the outcome could only be the same.
	if !tb.validated.take(name, args) {
		if err := validateArgs(e.schema, args); err != nil {
			return Result{}, fail(InvalidArguments, name, err)
		}
	}
	if tb.opts.Observe != nil {
		var end func(CallEnd)
		var before BreakerState
		if e.breaker != nil {
			before = e.breaker.State()
		}
		ctx, end = tb.opts.Observe(ctx, Call{Tool: name, CallID: callIDOf(ctx), Arguments: args, Info: e.info})
		defer func() {
			ce := CallEnd{Result: res, Err: err, BreakerBefore: before, BreakerAfter: before}
			if e.breaker != nil {
				ce.BreakerAfter = e.breaker.State()
			}
			end(ce)
		}()
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fail(Error, name, fmt.Errorf("cancelled before it started: %w", err))
	}
	if e.server != nil && tb.opts.Lock != nil && e.server.listChanged.Load() {
		// The server said its tools changed and the new list has not been
		// checked against the lock: what this name does now is unknown.
		return Result{}, fail(Error, name, fmt.Errorf("%s changed its tools since this call was decided, and the new list has not been checked against %s yet; not run", e.server.address, orLockFile(tb.opts.Lock.File)))
	}
	probe := false
	if e.breaker != nil {
		p, err := e.breaker.allow()
		if err != nil {
			return Result{}, fail(CircuitOpen, name, err)
		}
		probe = p
	}
	t := e.timeout
	if timeout > 0 && (t <= 0 || timeout < t) {
		t = timeout
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if tb.opts.Execute != nil {
		// The worker runs it under the timeout; the clock here is the
		// runtime's, which replays.
		start := tb.opts.Now()
		r, err := tb.execute(ctx, e, name, args, t)
		r.Elapsed = tb.opts.Now().Sub(start)
		if err != nil {
			f, o := classify(ctx, ctx, name, t, err)
			if e.breaker != nil {
				e.breaker.done(probe, o)
			}
			return r, f
		}
		if e.breaker != nil {
			e.breaker.done(probe, succeeded)
		}
		tb.cache.put(name, args, r, tb.opts.Now())
		return r, nil
	}
	if t > 0 {
		cctx, cancel = context.WithTimeout(ctx, t)
	}
	defer cancel()
	start := time.Now()
	content, c, err := safeRun(cctx, e.run, args, e.maxOutput)
	elapsed := time.Since(start)
	if err != nil {
		f, o := classify(ctx, cctx, name, t, err)
		if e.breaker != nil {
			e.breaker.done(probe, o)
		}
		return Result{Elapsed: elapsed, Tool: name}, f
	}
	if e.breaker != nil {
		e.breaker.done(probe, succeeded)
	}
	r := Result{Content: content, Truncated: c.truncated, Elapsed: elapsed, Tool: name}
	if c.truncated {
		r.Limit, r.Size = e.maxOutput, c.size
	}
	tb.cache.put(name, args, r, tb.opts.Now())
	return r, nil
}

// safeRun keeps a panicking executor (or a function the engine supplied,
// such as Delegate) from taking the run down: the panic is an error failure.
func safeRun(ctx context.Context, run runFunc, args json.RawMessage, limit int) (content string, c cut, err error) {
	defer func() {
		if r := recover(); r != nil {
			content, c, err = "", cut{}, fail(Error, "", fmt.Errorf("tool panicked: %v", r))
		}
	}()
	return run(ctx, args, limit)
}

// classify turns an executor's error into a *Failure and says how the
// breaker should count it.
func classify(parent, ctx context.Context, name string, timeout time.Duration, err error) (*Failure, outcome) {
	if parent.Err() != nil {
		// The caller gave up; that says nothing about the tool.
		return fail(Error, name, fmt.Errorf("cancelled: %w", err)), notCounted
	}
	var f *Failure
	if errors.As(err, &f) {
		if f.Tool == "" {
			f.Tool = name
		}
		if f.Kind == InvalidArguments {
			return f, notCounted
		}
		return f, failed
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fail(Timeout, name, fmt.Errorf("no result within %s: %w", timeout, err)), failed
	}
	return fail(Error, name, err), failed
}

// Dispatch runs approved calls concurrently, at most maxConcurrent at a time
// (all at once when maxConcurrent <= 0), each under timeout (none when
// <= 0) and the tool's own timeout, whichever is shorter. Outcomes are in
// call order, whatever the completion order.
func (tb *Toolbox) Dispatch(ctx context.Context, calls []policy.Approved, maxConcurrent int, timeout time.Duration) []Outcome {
	out := make([]Outcome, len(calls))
	if len(calls) == 1 && ctx.Err() == nil {
		// One call runs on the caller's goroutine: the timeout is the
		// context's either way, and the loop's most common round skips a
		// goroutine and a wake-up.
		out[0].Call = calls[0]
		out[0].Result, out[0].Err = tb.callApproved(ctx, calls[0], timeout)
		return out
	}
	if maxConcurrent <= 0 || maxConcurrent > len(calls) {
		maxConcurrent = len(calls)
	}
	if tb.opts.Go != nil {
		fns := make([]func(context.Context), len(calls))
		for i, c := range calls {
			out[i].Call = c
			fns[i] = func(ctx context.Context) {
				if err := ctx.Err(); err != nil {
					name, _, _ := toolCallOf(c.Action())
					out[i].Err = fail(Error, name, fmt.Errorf("cancelled before it started: %w", err))
					return
				}
				out[i].Result, out[i].Err = tb.callApproved(ctx, c, timeout)
			}
		}
		tb.opts.Go(ctx, maxConcurrent, fns)
		return out
	}
	sem := make(chan struct{}, max(maxConcurrent, 1))
	var wg sync.WaitGroup
	for i, c := range calls {
		out[i].Call = c
		// Cancellation is checked first: select picks among ready cases at
		// random, and a cancelled dispatch must not start more calls.
		acquired := false
		if ctx.Err() == nil {
			select {
			case sem <- struct{}{}:
				acquired = true
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			if acquired {
				<-sem
			}
			name, _, _ := toolCallOf(c.Action())
			out[i].Err = fail(Error, name, fmt.Errorf("cancelled before it started: %w", ctx.Err()))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i].Result, out[i].Err = tb.callApproved(ctx, c, timeout)
		}()
	}
	wg.Wait()
	return out
}

// Close stops every MCP server; no process is left behind. It also stops
// the goroutine that starts the toolbox's processes (see launcher).
func (tb *Toolbox) Close() error {
	var errs []error
	for _, s := range tb.sessions {
		errs = append(errs, s.close())
	}
	tb.sessions = nil
	tb.launch.close()
	return errors.Join(errs...)
}

func (tb *Toolbox) resolve(s plan.String) (string, error) {
	if s.Deferred == nil {
		return s.Value, nil
	}
	if tb.opts.Resolve == nil {
		return "", fmt.Errorf("deferred expression at %s: %w (no resolver)", s.Deferred.Range, ErrNotConfigured)
	}
	v, err := tb.opts.Resolve(s)
	if err != nil {
		// The error names the expression's place, never a value.
		return "", fmt.Errorf("deferred expression at %s: %w", s.Deferred.Range, err)
	}
	return v, nil
}

// resolveURL is resolve for a URL, through Options.ResolveURL.
func (tb *Toolbox) resolveURL(s plan.String) (string, error) {
	if s.Deferred == nil || tb.opts.ResolveURL == nil {
		return tb.resolve(s)
	}
	v, err := tb.opts.ResolveURL(s)
	if err != nil {
		return "", fmt.Errorf("deferred expression at %s: %w", s.Deferred.Range, err)
	}
	return v, nil
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resultCache keeps the last success per tool and arguments, for
// cached_result. It is bounded: the oldest key goes first. Arguments are
// kept as they were sent; get matches them as JSON values, so every
// success stays cheap and only a lookup (after a failure) pays for
// comparing them.
type resultCache struct {
	mu    sync.Mutex
	max   int
	items map[string]cachedResult // by tool name, a space, raw arguments
	fifo  []string
}

type cachedResult struct {
	result Result
	at     time.Time
}

func newResultCache(max int) *resultCache {
	return &resultCache{max: max, items: map[string]cachedResult{}}
}

func (c *resultCache) put(name string, args json.RawMessage, r Result, at time.Time) {
	key := name + " " + string(args)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; !ok {
		if len(c.fifo) >= c.max {
			delete(c.items, c.fifo[0])
			c.fifo = c.fifo[1:]
		}
		c.fifo = append(c.fifo, key)
	}
	c.items[key] = cachedResult{result: r, at: at}
}

// get returns the latest success of the tool for arguments equal, as JSON,
// to args, however they were written.
func (c *resultCache) get(name string, args json.RawMessage) (cachedResult, bool) {
	want := canonicalJSON(args)
	prefix := name + " "
	c.mu.Lock()
	defer c.mu.Unlock()
	var best cachedResult
	found := false
	for k, r := range c.items {
		if !strings.HasPrefix(k, prefix) || found && !r.at.After(best.at) {
			continue
		}
		if canonicalJSON(json.RawMessage(k[len(prefix):])) == want {
			best, found = r, true
		}
	}
	return best, found
}
