package repl

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/symbi-dev/symbi/engine"
	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/policy"
	"github.com/symbi-dev/symbi/stdlib"
)

// InputName is the file name diagnostics give the line being handled.
const InputName = "<repl>"

// Options are a session's inputs beyond the lines it handles.
type Options struct {
	// Vars and VarFiles are the --var and --var-file of the command line,
	// applied on every :load and :reload.
	Vars     map[string]string
	VarFiles []string
	// LookupEnv reads SYMBI_VAR_* variables, env() and secrets; nil reads
	// nothing, so a test session never depends on the environment.
	LookupEnv func(string) (string, bool)
	// StateDir overrides the configuration's state_dir for :run, :step and
	// :journal.
	StateDir string
	// Approver decides the actions a policy asks a person about, during
	// :call, :run and :step; nil denies them.
	Approver policy.Approver
	// Now and Rand make run ids, journal times and measured durations
	// reproducible in tests; nil uses the clock and crypto/rand.
	Now  func() time.Time
	Rand io.Reader
	// Engine, when set, adjusts the options of every engine the session
	// builds (the command line's telemetry and decision log).
	Engine func(*engine.Options)
}

// Session is one REPL session: the loaded configuration and, while :step
// is under way, the run being stepped. A Session is used by one goroutine.
type Session struct {
	opts  Options
	path  string         // the path of the last :load, for :reload
	cfg   *interp.Config // nil until a configuration loads without errors
	from  string         // the path cfg was loaded from
	input *hcl.File      // the line being handled, for diagnostic snippets
	// failed holds the files of a configuration that did not compile, so
	// that its diagnostics can show snippets.
	failed map[string]*hcl.File
	step   *stepper // the run :step is walking through, or nil
	// toolEng lists and calls tools for :tools and :call: it starts an
	// agent's MCP servers the first time they are needed and keeps them
	// until the configuration changes or the session ends.
	toolEng *engine.Engine
}

// New makes a session without a configuration; Load gives it one.
func New(opts Options) *Session {
	if opts.LookupEnv == nil {
		opts.LookupEnv = func(string) (string, bool) { return "", false }
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Session{opts: opts}
}

// Load compiles the configuration at path (a file or a directory). On
// errors the session keeps the configuration it had, and :reload tries path
// again. :load and :reload bound the compilation (its policy preparation)
// by the context Handle was given.
func (s *Session) Load(path string) hcl.Diagnostics {
	return s.load(context.Background(), path)
}

func (s *Session) load(ctx context.Context, path string) hcl.Diagnostics {
	s.path = path
	cfg, diags := interp.CompileContext(ctx, path, interp.Options{
		Vars:      s.opts.Vars,
		VarFiles:  s.opts.VarFiles,
		LookupEnv: s.opts.LookupEnv,
	})
	if diags.HasErrors() {
		if cfg != nil {
			// Keep the files so that the diagnostics can show snippets.
			s.failed = cfg.Files
		}
		return diags
	}
	s.failed = nil
	s.stopStep()
	s.closeTools()
	s.cfg, s.from = cfg, path
	return diags
}

// toolEngine is the session's engine for :tools and :call (a discovery
// engine: it opens no knowledge store, as :call never did).
func (s *Session) toolEngine() (*engine.Engine, error) {
	if s.toolEng != nil {
		return s.toolEng, nil
	}
	e, err := engine.New(s.cfg.Plan, engine.Options{
		BaseDir:   s.cfg.BaseDir,
		StateDir:  s.stateDir(),
		Protected: s.opts.VarFiles,
		LookupEnv: s.opts.LookupEnv,
		Now:       s.opts.Now,
		Rand:      s.opts.Rand,
		Discovery: true,
	})
	if err != nil {
		return nil, err
	}
	s.toolEng = e
	return e, nil
}

// closeTools stops the MCP servers :tools and :call started.
func (s *Session) closeTools() error {
	if s.toolEng == nil {
		return nil
	}
	err := s.toolEng.Close()
	s.toolEng = nil
	return err
}

// Loaded reports the path the configuration was loaded from, or "" when
// none is loaded.
func (s *Session) Loaded() string {
	if s.cfg == nil {
		return ""
	}
	return s.from
}

// Files returns every file a diagnostic of the last Handle or Load may
// refer to, by the name it uses: the configuration's files and InputName.
func (s *Session) Files() map[string]*hcl.File {
	m := map[string]*hcl.File{}
	if s.cfg != nil {
		for k, f := range s.cfg.Files {
			m[k] = f
		}
	}
	for k, f := range s.failed {
		m[k] = f
	}
	if s.input != nil {
		m[InputName] = s.input
	}
	return m
}

// Prompt is what the terminal shows before the next line: "step> " while a
// run is being stepped, otherwise "> ".
func (s *Session) Prompt() string {
	if s.step != nil {
		return "step> "
	}
	return "> "
}

// ContinuationPrompt is the prompt for the lines of an input that NeedsMore.
func (s *Session) ContinuationPrompt() string { return "... " }

// Close ends a run that :step left paused and stops the MCP servers that
// :tools and :call started. The session can still be used.
func (s *Session) Close() error {
	s.stopStep()
	return s.closeTools()
}

// Handle runs one input: a command (a line that starts with ':') or an
// expression. An empty line does nothing, except while :step is under way,
// where it runs the next phase. Errors come back as diagnostics; the session
// stays usable after any of them.
func (s *Session) Handle(ctx context.Context, line string) (output string, exit bool, diags hcl.Diagnostics) {
	s.input = &hcl.File{Bytes: []byte(line)}
	trimmed := strings.TrimSpace(line)
	switch {
	case trimmed == "" && s.step != nil:
		out, diags := s.nextPhase(ctx)
		return out, false, diags
	case trimmed == "":
		return "", false, nil
	case strings.HasPrefix(trimmed, ":"):
		return s.handleCommand(ctx, line)
	case trimmed == "exit" || trimmed == "quit":
		// What a Terraform console user types first; an expression cannot
		// be a bare "exit" in this language anyway.
		s.stopStep()
		return "", true, nil
	}
	out, diags := s.eval(line)
	return out, false, diags
}

// call is one command line, split into the command's name and the text of
// its arguments, with their offset in the line for diagnostics.
type call struct {
	line    string
	name    string
	nameRng hcl.Range
	args    string // trimmed
	argsOff int    // byte offset of args in line
}

func (s *Session) handleCommand(ctx context.Context, line string) (string, bool, hcl.Diagnostics) {
	start := len(line) - len(strings.TrimLeft(line, " \t\r\n"))
	end := start
	for end < len(line) && !isSpace(line[end]) {
		end++
	}
	c := call{line: line, name: line[start:end], nameRng: rangeAt(line, start, end)}
	rest := line[end:]
	lead := len(rest) - len(strings.TrimLeft(rest, " \t\r\n"))
	c.args = strings.TrimSpace(rest)
	c.argsOff = end + lead
	cmd, ok := lookupCommand(c.name)
	if !ok {
		d := &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown command",
			Detail:   fmt.Sprintf("There is no command %s.%s Type :help for the list.", c.name, suggest(c.name, commandNames())),
			Subject:  &c.nameRng,
		}
		return "", false, hcl.Diagnostics{d}
	}
	if cmd.name == ":quit" {
		s.stopStep()
		return "", true, nil
	}
	if cmd.needsConfig && s.cfg == nil {
		return "", false, hcl.Diagnostics{s.noConfig(c)}
	}
	out, diags := cmd.run(s, ctx, c)
	return out, false, diags
}

func (s *Session) noConfig(c call) *hcl.Diagnostic {
	detail := fmt.Sprintf("%s needs a configuration; load one with :load PATH.", c.name)
	if s.path != "" {
		detail = fmt.Sprintf("%s needs a configuration, and %s did not load; fix it and :reload.", c.name, s.path)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No configuration loaded", Detail: detail, Subject: &c.nameRng}
}

// scope is what expressions are evaluated in: the configuration's, or the
// functions alone before one is loaded.
func (s *Session) scope() *hcl.EvalContext {
	if s.cfg != nil && s.cfg.Scope != nil {
		return s.cfg.Scope
	}
	dir, _ := os.Getwd()
	return &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: stdlib.Functions(stdlib.Options{BaseDir: dir, LookupEnv: s.opts.LookupEnv})}
}

// baseDir is the configuration directory, against which relative paths in
// the plan are read.
func (s *Session) baseDir() string {
	if s.cfg == nil {
		return "."
	}
	return s.cfg.BaseDir
}

func (s *Session) functions() []stdlib.Func {
	return stdlib.Registry(stdlib.Options{BaseDir: s.baseDir(), LookupEnv: s.opts.LookupEnv})
}

// word splits the first whitespace-separated word off the arguments.
func (c call) word() (w string, rng hcl.Range, rest string, restOff int) {
	end := 0
	for end < len(c.args) && !isSpace(c.args[end]) {
		end++
	}
	w = c.args[:end]
	rng = rangeAt(c.line, c.argsOff, c.argsOff+end)
	tail := c.args[end:]
	lead := len(tail) - len(strings.TrimLeft(tail, " \t\r\n"))
	return w, rng, strings.TrimSpace(tail), c.argsOff + end + lead
}

// argsRange is the range of all of the arguments, or of the command's name
// when there are none.
func (c call) argsRange() hcl.Range {
	if c.args == "" {
		return c.nameRng
	}
	return rangeAt(c.line, c.argsOff, c.argsOff+len(c.args))
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// posAt is the position of byte offset off in src.
func posAt(src string, off int) hcl.Pos {
	off = min(max(off, 0), len(src))
	line, col := 1, 1
	for i := 0; i < off; {
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += n
	}
	return hcl.Pos{Line: line, Column: col, Byte: off}
}

func rangeAt(src string, start, end int) hcl.Range {
	if end <= start {
		end = start + 1
		if end > len(src) {
			end = len(src)
		}
	}
	return hcl.Range{Filename: InputName, Start: posAt(src, start), End: posAt(src, end)}
}

func errorAt(rng hcl.Range, summary, format string, args ...any) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: &rng}}
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// stateDir is where runs keep their journals: Options.StateDir, or the
// configuration's state_dir (".symbi" by default) relative to its directory.
func (s *Session) stateDir() string {
	if s.opts.StateDir != "" {
		return s.opts.StateDir
	}
	sd := plan.DefaultStateDir
	if s.cfg != nil && s.cfg.Plan.Settings.StateDir != "" {
		sd = s.cfg.Plan.Settings.StateDir
	}
	if filepath.IsAbs(sd) {
		return sd
	}
	return filepath.Join(s.baseDir(), sd)
}
