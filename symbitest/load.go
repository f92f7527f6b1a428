package symbitest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/symbi-dev/symbi/interp"
	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/plan"
	"github.com/symbi-dev/symbi/provider/cassette"
	"github.com/symbi-dev/symbi/provider/scripted"
	"github.com/symbi-dev/symbi/stdlib"
)

// Discover lists the test files PATH names, sorted: PATH itself when it is
// a test file; the test file of a configuration file (X.symbitest.hcl
// beside X.hcl); every *.symbitest.hcl under a directory, at any depth,
// except in directories whose name starts with "." (a state directory) and
// node_modules.
func Discover(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if lang.IsTestFile(path) {
			return []string{path}, nil
		}
		if strings.HasSuffix(path, ".hcl") {
			tf := strings.TrimSuffix(path, ".hcl") + lang.TestFileSuffix
			if _, err := os.Stat(tf); err == nil {
				return []string{tf}, nil
			}
			return nil, fmt.Errorf("%s has no test file: write its tests in %s", path, tf)
		}
		return nil, fmt.Errorf("%s is not a test file (*%s), a configuration file or a directory", path, lang.TestFileSuffix)
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if lang.IsTestFile(d.Name()) && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// LoadOptions are what loading test files needs from its surroundings.
type LoadOptions struct {
	// Validate compiles each configuration as `symbi validate` does:
	// a variable without a value is unknown, and a missing cassette is no
	// error. `symbi test` loads with it unset.
	Validate bool
	// Update: cassettes will be recorded, so a missing one is no error.
	Update bool
	// LookupEnv reads the environment (SYMBI_VAR_*, env() in test files);
	// os.LookupEnv when nil.
	LookupEnv func(string) (string, bool)
	// SymbiVersion is checked against required_version.
	SymbiVersion string
}

// Suite is a set of test files, loaded.
type Suite struct {
	Files []*File
	// Sources are every file the diagnostics may point into: the test
	// files and the configurations' files, by name.
	Sources map[string]*hcl.File
}

// File is one test file.
type File struct {
	Path   string // as discovered
	Dir    string
	Config string // the configuration it tests
	Runs   []*Run
}

// Run is one run block, checked and compiled.
type Run struct {
	File     *File
	Name     string
	DefRange hcl.Range

	Agent   string // agent address; "" with BestOfN
	BestOfN string // best_of_n address
	Input   string
	// Cassette and Script are paths (relative to the working directory,
	// as given); at most one is set, and neither means the configured
	// providers.
	Cassette      string
	CassetteRange hcl.Range
	Script        string

	Budget          map[string]cty.Value
	OverrideTools   []ToolOverride
	OverrideServers []ServerOverride

	ExpectFailures      []string
	ExpectFailuresRange hcl.Range
	Repeat              int
	PassRate            float64
	Asserts             []*Assert

	Config *interp.Config
}

// ToolOverride replaces a tool's executor for a run: a fixed result, a
// fixed error, or a command.
type ToolOverride struct {
	Target  string // tool address
	Result  *string
	Error   string
	Command []string // absolute argv[0] when it was a relative path
}

// ServerOverride starts an MCP server another way for a run.
type ServerOverride struct {
	Target  string // mcp_server address
	Command []string
	URL     string
}

// Assert is one assert block.
type Assert struct {
	Condition    hcl.Expression
	ErrorMessage hcl.Expression
	Range        hcl.Range
}

// Outcomes expect_failures may list: every way a run ends but completed.
var Outcomes = []string{"agent_terminated", "budget_exceeded", "cancelled", "error", "max_iterations", "policy_denial", "timeout"}

// Load reads, checks and compiles test files. It returns every diagnostic
// at once, and the suite is not to be run when they have errors.
func Load(ctx context.Context, paths []string, opts LoadOptions) (*Suite, hcl.Diagnostics) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	l := &loader{ctx: ctx, opts: opts, suite: &Suite{Sources: map[string]*hcl.File{}}, configs: map[string]*compiled{}}
	for _, p := range paths {
		l.file(p)
	}
	return l.suite, l.diags
}

type loader struct {
	ctx     context.Context
	opts    LoadOptions
	suite   *Suite
	diags   hcl.Diagnostics
	configs map[string]*compiled // by config path and variables
}

type compiled struct {
	cfg   *interp.Config
	diags hcl.Diagnostics
}

func (l *loader) errorf(subject *hcl.Range, summary, format string, args ...any) {
	l.diags = append(l.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: subject})
}

func (l *loader) warnf(subject *hcl.Range, summary, format string, args ...any) {
	l.diags = append(l.diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: subject})
}

// file loads one test file and its runs.
func (l *loader) file(path string) {
	src, err := os.ReadFile(path)
	if err != nil {
		l.errorf(&hcl.Range{Filename: path, Start: hcl.InitialPos, End: hcl.InitialPos}, "Cannot read test file", "%v.", err)
		return
	}
	tf, diags := lang.ParseTestFile(lang.Source{Name: path, Bytes: src})
	l.suite.Sources[path] = tf.File
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return
	}
	f := &File{Path: path, Dir: filepath.Dir(path)}
	ev := l.evalContext(f.Dir)
	f.Config = l.configPath(tf, f, ev)
	fileVars := l.variables(tf.Variables, ev)
	seen := map[string]*lang.Block{}
	for _, rb := range tf.Runs {
		if prev, dup := seen[rb.Name]; dup {
			l.errorf(rb.DefRange.Ptr(), "Duplicate run", "A run named %q is already in this file, at %s.", rb.Name, prev.DefRange)
			continue
		}
		seen[rb.Name] = rb
		if r := l.run(f, rb, fileVars, ev); r != nil {
			f.Runs = append(f.Runs, r)
		}
	}
	if len(tf.Runs) == 0 {
		rng := hcl.Range{Filename: path, Start: hcl.InitialPos, End: hcl.InitialPos}
		l.warnf(&rng, "No runs", "The test file has no run blocks, so it tests nothing.")
	}
	l.suite.Files = append(l.suite.Files, f)
}

// evalContext is the scope of a test file's expressions: the function
// library, with file() reading relative to the test file. No variables.
func (l *loader) evalContext(dir string) *hcl.EvalContext {
	return &hcl.EvalContext{Functions: stdlib.Functions(stdlib.Options{BaseDir: dir, LookupEnv: l.opts.LookupEnv})}
}

// configPath is the configuration a test file tests: its config
// attribute, relative to the file; else X.hcl beside X.symbitest.hcl;
// else the directory that holds it.
func (l *loader) configPath(tf *lang.TestFile, f *File, ev *hcl.EvalContext) string {
	if a := tf.Attrs["config"]; a != nil {
		s, ok := l.str(a.Expr, ev, "config")
		if !ok {
			return ""
		}
		p := resolvePath(f.Dir, s)
		if _, err := os.Stat(p); err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Configuration not found", "config names %s, relative to the test file: %v.", s, err)
			return ""
		}
		return p
	}
	stem := strings.TrimSuffix(f.Path, lang.TestFileSuffix) + ".hcl"
	if _, err := os.Stat(stem); err == nil {
		return stem
	}
	return f.Dir
}

// variables evaluates a variables block.
func (l *loader) variables(blocks []*lang.Block, ev *hcl.EvalContext) map[string]interp.Value {
	out := map[string]interp.Value{}
	for _, b := range blocks {
		for _, a := range lang.SortedAttrs(b.Attrs) {
			v, diags := a.Expr.Value(ev)
			l.diags = append(l.diags, diags...)
			if diags.HasErrors() {
				continue
			}
			out[a.Name] = interp.Value{Value: v, Range: a.Expr.Range()}
		}
	}
	return out
}

// compile compiles a configuration with a run's variables, once per
// distinct set.
func (l *loader) compile(path string, vars map[string]interp.Value) *compiled {
	key := path
	for _, name := range sortedKeys(vars) {
		b, _ := ctyjson.Marshal(vars[name].Value, cty.DynamicPseudoType)
		key += "\x00" + name + "=" + string(b)
	}
	if c, ok := l.configs[key]; ok {
		return c
	}
	cfg, diags := interp.CompileContext(l.ctx, path, interp.Options{
		Values: vars, Validate: l.opts.Validate, LookupEnv: l.opts.LookupEnv, SymbiVersion: l.opts.SymbiVersion, NoScope: true,
	})
	c := &compiled{cfg: cfg, diags: diags}
	l.configs[key] = c
	if cfg != nil {
		for name, f := range cfg.Files {
			l.suite.Sources[name] = f
		}
	}
	// A configuration's diagnostics are reported once, however many runs
	// compile it.
	for _, d := range diags {
		if !slices.ContainsFunc(l.diags, func(e *hcl.Diagnostic) bool { return sameDiag(d, e) }) {
			l.diags = append(l.diags, d)
		}
	}
	return c
}

func sameDiag(a, b *hcl.Diagnostic) bool {
	if a.Summary != b.Summary || a.Detail != b.Detail || (a.Subject == nil) != (b.Subject == nil) {
		return false
	}
	return a.Subject == nil || *a.Subject == *b.Subject
}

// run checks one run block against its compiled configuration.
func (l *loader) run(f *File, b *lang.Block, fileVars map[string]interp.Value, ev *hcl.EvalContext) *Run {
	r := &Run{File: f, Name: b.Name, DefRange: b.DefRange, Repeat: 1, PassRate: 1}
	vars := map[string]interp.Value{}
	for k, v := range fileVars {
		vars[k] = v
	}
	for k, v := range l.variables(b.Nested("variables"), ev) {
		vars[k] = v
	}
	if f.Config == "" {
		return nil
	}
	c := l.compile(f.Config, vars)
	if c.cfg == nil || c.diags.HasErrors() {
		return nil
	}
	r.Config = c.cfg
	p := c.cfg.Plan
	before := len(l.diags)

	l.target(b, r, p)
	r.Input = l.input(b, p, vars, ev)
	l.modelSource(b, r, ev)
	l.budget(b, r, ev)
	l.overrides(b, r, p, ev)
	l.expectations(b, r, ev)
	for _, ab := range b.Nested("assert") {
		if a := l.assert(ab); a != nil {
			r.Asserts = append(r.Asserts, a)
		}
	}
	if len(r.Asserts) == 0 && len(r.ExpectFailures) == 0 {
		l.warnf(b.DefRange.Ptr(), "Run without assertions", "The run %q has no assert block: it passes whenever the run completes.", r.Name)
	}
	if hasErrors(l.diags[before:]) {
		return nil
	}
	return r
}

func hasErrors(ds hcl.Diagnostics) bool { return ds.HasErrors() }

// target checks agent and best_of_n.
func (l *loader) target(b *lang.Block, r *Run, p *plan.Plan) {
	agentAttr, bonAttr := b.Attrs["agent"], b.Attrs["best_of_n"]
	switch {
	case agentAttr != nil && bonAttr != nil:
		l.errorf(bonAttr.NameRange.Ptr(), "Conflicting run targets", "A run runs an agent or a best_of_n block, not both; agent is set at %s.", agentAttr.NameRange)
	case bonAttr != nil:
		var names []string
		for _, bn := range p.BestOfN {
			names = append(names, bn.Address)
		}
		r.BestOfN = l.reference(bonAttr, "best_of_n", names)
	case agentAttr != nil:
		var names []string
		for _, a := range p.Agents {
			names = append(names, a.Address)
		}
		r.Agent = l.reference(agentAttr, "agent", names)
	default:
		switch len(p.Agents) {
		case 1:
			r.Agent = p.Agents[0].Address
		case 0:
			l.errorf(b.DefRange.Ptr(), "No agent to run", "The configuration %s has no agent.", r.File.Config)
		default:
			var names []string
			for _, a := range p.Agents {
				names = append(names, a.Address)
			}
			l.errorf(b.DefRange.Ptr(), "Which agent?", "The configuration %s has %d agents (%s): name one with agent = %s.", r.File.Config, len(names), strings.Join(names, ", "), names[0])
		}
	}
}

// reference reads `attr = kind.name` and checks the name is one of
// addrs.
func (l *loader) reference(a *hcl.Attribute, kind string, addrs []string) string {
	tr, diags := hcl.AbsTraversalForExpr(a.Expr)
	if diags.HasErrors() || len(tr) != 2 || tr.RootName() != kind {
		l.errorf(a.Expr.Range().Ptr(), "Invalid reference", "%s takes a reference to a %s block of the configuration: %s = %s.NAME.", a.Name, kind, a.Name, kind)
		return ""
	}
	step, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		l.errorf(a.Expr.Range().Ptr(), "Invalid reference", "%s takes a reference to a %s block: %s = %s.NAME.", a.Name, kind, a.Name, kind)
		return ""
	}
	addr := kind + "." + step.Name
	if !slices.Contains(addrs, addr) {
		l.errorf(a.Expr.Range().Ptr(), fmt.Sprintf("Reference to undeclared %s", kind), "The configuration has no %s.%s", addr, suggest(addr, addrs))
		return ""
	}
	return addr
}

// input is the run's input: its input attribute, else the configuration's
// input variable, as symbi run takes it.
func (l *loader) input(b *lang.Block, p *plan.Plan, vars map[string]interp.Value, ev *hcl.EvalContext) string {
	if a := b.Attrs["input"]; a != nil {
		s, _ := l.str(a.Expr, ev, "input")
		return s
	}
	if v, ok := vars["input"]; ok && v.Value.Type() == cty.String && v.Value.IsKnown() && !v.Value.IsNull() {
		return v.Value.AsString()
	}
	for _, v := range p.Variables {
		if v.Name == "input" && len(v.Value) > 0 {
			if s, err := ctyjson.Unmarshal(v.Value, cty.String); err == nil && !s.IsNull() && s.AsString() != "" {
				return s.AsString()
			}
		}
	}
	if l.opts.Validate {
		return "" // a variable without a value is unknown in validate
	}
	l.errorf(b.DefRange.Ptr(), "No input", "The run %q has no input: set input, or give the configuration a variable \"input\" with a default.", b.Name)
	return ""
}

// modelSource checks cassette and script.
func (l *loader) modelSource(b *lang.Block, r *Run, ev *hcl.EvalContext) {
	ca, sa := b.Attrs["cassette"], b.Attrs["script"]
	if ca != nil && sa != nil {
		l.errorf(sa.NameRange.Ptr(), "Conflicting model sources", "A run's models answer from a cassette or from a script, not both; cassette is set at %s.", ca.NameRange)
		return
	}
	if ca != nil {
		s, ok := l.str(ca.Expr, ev, "cassette")
		if !ok {
			return
		}
		r.Cassette, r.CassetteRange = resolvePath(r.File.Dir, s), ca.Expr.Range()
		_, err := os.Stat(r.Cassette)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !l.opts.Update && !l.opts.Validate {
				l.errorf(ca.Expr.Range().Ptr(), "Cassette not found", "There is no cassette %s yet: record it from the live model with `symbi test -update` (or `symbi run --record %s`).", r.Cassette, r.Cassette)
			}
		case err != nil:
			l.errorf(ca.Expr.Range().Ptr(), "Cannot read the cassette", "%v.", err)
		default:
			if _, err := cassette.Load(r.Cassette); err != nil {
				l.errorf(ca.Expr.Range().Ptr(), "Invalid cassette", "%v.", err)
			}
		}
	}
	if sa != nil {
		s, ok := l.str(sa.Expr, ev, "script")
		if !ok {
			return
		}
		r.Script = resolvePath(r.File.Dir, s)
		if _, err := scripted.Load(r.Script); err != nil {
			l.errorf(sa.Expr.Range().Ptr(), "Invalid script", "%v.", err)
		}
	}
}

// budgetFields are the budget attributes a run may override, each with
// where it goes in the plan; TestBudgetFieldsCoverTheLanguage holds it to
// the budget block's schema.
var budgetFields = map[string]func(b *plan.Budget, v cty.Value) error{
	"max_iterations":                   intField(func(b *plan.Budget) *int64 { return &b.MaxIterations }),
	"max_model_calls":                  intField(func(b *plan.Budget) *int64 { return &b.MaxModelCalls }),
	"max_tool_calls":                   intField(func(b *plan.Budget) *int64 { return &b.MaxToolCalls }),
	"max_tool_rounds":                  intField(func(b *plan.Budget) *int64 { return &b.MaxToolRounds }),
	"max_reflection_attempts":          intField(func(b *plan.Budget) *int64 { return &b.MaxReflectionAttempts }),
	"max_plan_steps":                   intField(func(b *plan.Budget) *int64 { return &b.MaxPlanSteps }),
	"max_prompt_tokens":                intField(func(b *plan.Budget) *int64 { return &b.MaxPromptTokens }),
	"max_completion_tokens":            intField(func(b *plan.Budget) *int64 { return &b.MaxCompletionTokens }),
	"max_total_tokens":                 intField(func(b *plan.Budget) *int64 { return &b.MaxTotalTokens }),
	"estimated_output_tokens_per_call": intField(func(b *plan.Budget) *int64 { return &b.EstimatedOutputTokensPerCall }),
	"max_cost_usd": func(b *plan.Budget, v cty.Value) error {
		f, _ := v.AsBigFloat().Float64()
		if f < 0 {
			return errors.New("must not be negative")
		}
		b.MaxCostUSD = f
		return nil
	},
	"timeout": func(b *plan.Budget, v cty.Value) error {
		d, err := stdlib.ParseDuration(v.AsString())
		if err != nil {
			return err
		}
		b.Timeout = plan.Duration(d)
		return nil
	},
}

func intField(field func(*plan.Budget) *int64) func(*plan.Budget, cty.Value) error {
	return func(b *plan.Budget, v cty.Value) error {
		bf := v.AsBigFloat()
		if !bf.IsInt() {
			return errors.New("must be a whole number")
		}
		n, _ := bf.Int64()
		if n < 0 {
			return errors.New("must not be negative (0 is unlimited)")
		}
		*field(b) = n
		return nil
	}
}

// budget checks the budget override.
func (l *loader) budget(b *lang.Block, r *Run, ev *hcl.EvalContext) {
	bb := b.One("budget")
	if bb == nil {
		return
	}
	r.Budget = map[string]cty.Value{}
	for _, a := range lang.SortedAttrs(bb.Attrs) {
		v, diags := a.Expr.Value(ev)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		want := cty.Number
		if a.Name == "timeout" {
			want = cty.String
		}
		cv, err := convert.Convert(v, want)
		if err != nil || cv.IsNull() || !cv.IsKnown() {
			l.errorf(a.Expr.Range().Ptr(), "Invalid budget value", "%s must be a %s.", a.Name, want.FriendlyName())
			continue
		}
		var scratch plan.Budget
		if err := budgetFields[a.Name](&scratch, cv); err != nil {
			l.errorf(a.Expr.Range().Ptr(), "Invalid budget value", "%s: %v.", a.Name, err)
			continue
		}
		r.Budget[a.Name] = cv
	}
}

// overrides checks override_tool and override_mcp_server blocks.
func (l *loader) overrides(b *lang.Block, r *Run, p *plan.Plan, ev *hcl.EvalContext) {
	var toolAddrs, serverAddrs []string
	for _, t := range p.Tools {
		toolAddrs = append(toolAddrs, t.Address)
	}
	for _, s := range p.MCPServers {
		serverAddrs = append(serverAddrs, s.Address)
	}
	seen := map[string]hcl.Range{}
	for _, ob := range b.Nested("override_tool") {
		ta := ob.Attrs["target"]
		if ta == nil {
			l.errorf(ob.DefRange.Ptr(), "Missing target", "An override_tool block names the tool it replaces: target = tool.NAME.")
			continue
		}
		addr := l.reference(ta, "tool", toolAddrs)
		if addr == "" {
			continue
		}
		if prev, dup := seen[addr]; dup {
			l.errorf(ob.DefRange.Ptr(), "Duplicate override", "%s is already overridden in this run, at %s.", addr, prev)
			continue
		}
		seen[addr] = ob.DefRange
		o := ToolOverride{Target: addr}
		set := 0
		if a := ob.Attrs["result"]; a != nil {
			set++
			if s, ok := l.str(a.Expr, ev, "result"); ok {
				o.Result = &s
			}
		}
		if a := ob.Attrs["error"]; a != nil {
			set++
			if s, ok := l.str(a.Expr, ev, "error"); ok {
				if s == "" {
					l.errorf(a.Expr.Range().Ptr(), "Empty error", "error is the message every call fails with; it cannot be empty.")
				}
				o.Error = s
			}
		}
		if a := ob.Attrs["command"]; a != nil {
			set++
			o.Command = l.command(a, r.File.Dir, ev)
		}
		if set != 1 {
			l.errorf(ob.DefRange.Ptr(), "Invalid override", "An override_tool block sets exactly one of result (a fixed output), error (a fixed failure) and command (a scripted command); this one sets %d.", set)
			continue
		}
		r.OverrideTools = append(r.OverrideTools, o)
	}
	for _, ob := range b.Nested("override_mcp_server") {
		ta := ob.Attrs["target"]
		if ta == nil {
			l.errorf(ob.DefRange.Ptr(), "Missing target", "An override_mcp_server block names the server it replaces: target = mcp_server.NAME.")
			continue
		}
		addr := l.reference(ta, "mcp_server", serverAddrs)
		if addr == "" {
			continue
		}
		if prev, dup := seen[addr]; dup {
			l.errorf(ob.DefRange.Ptr(), "Duplicate override", "%s is already overridden in this run, at %s.", addr, prev)
			continue
		}
		seen[addr] = ob.DefRange
		o := ServerOverride{Target: addr}
		ca, ua := ob.Attrs["command"], ob.Attrs["url"]
		switch {
		case (ca == nil) == (ua == nil):
			l.errorf(ob.DefRange.Ptr(), "Invalid override", "An override_mcp_server block sets exactly one of command and url.")
			continue
		case ca != nil:
			o.Command = l.command(ca, r.File.Dir, ev)
		default:
			o.URL, _ = l.str(ua.Expr, ev, "url")
		}
		r.OverrideServers = append(r.OverrideServers, o)
	}
}

// command reads a non-empty list of strings; a relative argv[0] that
// names a file (./fake.sh) is made absolute from the test file's directory.
func (l *loader) command(a *hcl.Attribute, dir string, ev *hcl.EvalContext) []string {
	v, diags := a.Expr.Value(ev)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return nil
	}
	lv, err := convert.Convert(v, cty.List(cty.String))
	if err != nil || lv.IsNull() || !lv.IsWhollyKnown() || lv.LengthInt() == 0 {
		l.errorf(a.Expr.Range().Ptr(), "Invalid command", "command is a non-empty list of strings: the program and its arguments.")
		return nil
	}
	var argv []string
	for _, e := range lv.AsValueSlice() {
		if e.IsNull() {
			l.errorf(a.Expr.Range().Ptr(), "Invalid command", "command has a null element.")
			return nil
		}
		argv = append(argv, e.AsString())
	}
	if strings.ContainsRune(argv[0], '/') && !filepath.IsAbs(argv[0]) {
		if abs, err := filepath.Abs(filepath.Join(dir, argv[0])); err == nil {
			argv[0] = abs
		}
	}
	return argv
}

// expectations checks expect_failures, repeat and pass_rate.
func (l *loader) expectations(b *lang.Block, r *Run, ev *hcl.EvalContext) {
	if a := b.Attrs["expect_failures"]; a != nil {
		r.ExpectFailuresRange = a.Expr.Range()
		v, diags := a.Expr.Value(ev)
		l.diags = append(l.diags, diags...)
		if !diags.HasErrors() {
			lv, err := convert.Convert(v, cty.List(cty.String))
			if err != nil || lv.IsNull() || !lv.IsWhollyKnown() || lv.LengthInt() == 0 {
				l.errorf(a.Expr.Range().Ptr(), "Invalid expect_failures", "expect_failures is a non-empty list of the ways the run may end: %s.", quoteAll(Outcomes))
			} else {
				for _, e := range lv.AsValueSlice() {
					s := e.AsString()
					if !slices.Contains(Outcomes, s) {
						l.errorf(a.Expr.Range().Ptr(), "Invalid expect_failures", "%q is not a way a run ends: %s.%s", s, quoteAll(Outcomes), suggestQuoted(s, Outcomes))
						continue
					}
					r.ExpectFailures = append(r.ExpectFailures, s)
				}
			}
		}
	}
	if a := b.Attrs["repeat"]; a != nil {
		if n, ok := l.number(a, ev); ok {
			if !n.IsInt() || n.Sign() < 1 || n.Cmp(bigInt(maxRepeat)) > 0 {
				l.errorf(a.Expr.Range().Ptr(), "Invalid repeat", "repeat is a whole number from 1 to %d.", maxRepeat)
			} else {
				i, _ := n.Int64()
				r.Repeat = int(i)
			}
		}
	}
	if a := b.Attrs["pass_rate"]; a != nil {
		if n, ok := l.number(a, ev); ok {
			f, _ := n.Float64()
			if f < 0 || f > 1 {
				l.errorf(a.Expr.Range().Ptr(), "Invalid pass_rate", "pass_rate is the share of repetitions that must pass, from 0 to 1.")
			} else {
				r.PassRate = f
				if b.Attrs["repeat"] == nil {
					l.warnf(a.NameRange.Ptr(), "pass_rate without repeat", "The run is run once, so pass_rate %g means it must pass; set repeat to run it more times.", f)
				}
			}
		}
	}
	if r.Repeat > 1 && (r.Cassette != "" || r.Script != "") {
		l.warnf(b.Attrs["repeat"].NameRange.Ptr(), "Repeated replay", "The run's models answer from a recording, the same way every time: repeat and pass_rate are for the configured (live) providers.")
	}
}

// maxRepeat bounds repeat: a test that needs more is a benchmark.
const maxRepeat = 1000

// assert checks an assert block: both attributes present, and the
// condition a bool over the run's result, with every reference and
// attribute checked against the result's type.
func (l *loader) assert(b *lang.Block) *Assert {
	ca, ma := b.Attrs["condition"], b.Attrs["error_message"]
	if ca == nil || ma == nil {
		l.errorf(b.DefRange.Ptr(), "Incomplete assert", "An assert block has a condition and an error_message.")
		return nil
	}
	ctx := assertContext(cty.UnknownVal(RunType), "")
	v, diags := ca.Expr.Value(ctx)
	l.diags = append(l.diags, explain(diags)...)
	if diags.HasErrors() {
		return nil
	}
	if ty := v.Type(); ty != cty.Bool && ty != cty.DynamicPseudoType {
		l.errorf(ca.Expr.Range().Ptr(), "Invalid condition", "The condition's value is of type %s, not bool: compare it with something (run.answer == \"42\").", ty.FriendlyName())
		return nil
	}
	// An unknown list hides what a for expression does with its elements:
	// a result with one of everything shows a misspelt attribute there too.
	// Only such misspellings count; the sample's values mean nothing.
	_, diags = ca.Expr.Value(assertContext(sample(RunType), ""))
	for _, d := range explain(diags) {
		if d.Summary == "Unsupported attribute" {
			l.diags = append(l.diags, d)
		}
	}
	mv, diags := ma.Expr.Value(ctx)
	l.diags = append(l.diags, explain(diags)...)
	if diags.HasErrors() {
		return nil
	}
	if _, err := convert.Convert(mv, cty.String); err != nil {
		l.errorf(ma.Expr.Range().Ptr(), "Invalid error_message", "error_message is a string: %v.", err)
		return nil
	}
	return &Assert{Condition: ca.Expr, ErrorMessage: ma.Expr, Range: b.DefRange}
}

// explain adds to hcl's diagnostics about an assertion what it leaves
// out: the attribute a misspelt one probably is, and what an assertion may
// refer to.
func explain(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		switch d.Summary {
		case "Unsupported attribute":
			var name string
			if _, err := fmt.Sscanf(d.Detail, "This object does not have an attribute named %q.", &name); err == nil {
				d.Detail += suggestQuoted(name, attributeNames(RunType))
			}
		case "Unknown variable":
			d.Detail += " An assertion refers to the run's result as run: run.answer, run.status, run.tool_calls, run.decisions, run.usage, run.iterations, run.journal."
		}
	}
	return diags
}

// attributeNames are the attribute names of an object type and of the
// object types inside it.
func attributeNames(ty cty.Type) []string {
	var out []string
	switch {
	case ty.IsObjectType():
		for name, at := range ty.AttributeTypes() {
			out = append(out, name)
			out = append(out, attributeNames(at)...)
		}
	case ty.IsListType():
		out = attributeNames(ty.ElementType())
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// sample is a known value of type ty with one element in every list.
func sample(ty cty.Type) cty.Value {
	switch {
	case ty == cty.String:
		return cty.StringVal("")
	case ty == cty.Number:
		return cty.Zero
	case ty == cty.Bool:
		return cty.False
	case ty.IsListType():
		return cty.ListVal([]cty.Value{sample(ty.ElementType())})
	case ty.IsObjectType():
		attrs := map[string]cty.Value{}
		for name, at := range ty.AttributeTypes() {
			attrs[name] = sample(at)
		}
		return cty.ObjectVal(attrs)
	}
	return cty.UnknownVal(ty)
}

// str evaluates a string attribute.
func (l *loader) str(expr hcl.Expression, ev *hcl.EvalContext, name string) (string, bool) {
	v, diags := expr.Value(ev)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return "", false
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.IsNull() || !sv.IsKnown() {
		l.errorf(expr.Range().Ptr(), "Invalid "+name, "%s must be a string.", name)
		return "", false
	}
	return sv.AsString(), true
}

// resolvePath is a path written in a test file: relative to its
// directory unless absolute.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// suggest returns " Did you mean x?" for the closest candidate, or "".
func suggest(s string, candidates []string) string {
	if best := closest(s, candidates); best != "" {
		return fmt.Sprintf(" Did you mean %s?", best)
	}
	return ""
}

// suggestQuoted is suggest with the candidate quoted.
func suggestQuoted(s string, candidates []string) string {
	if best := closest(s, candidates); best != "" {
		return fmt.Sprintf(" Did you mean %q?", best)
	}
	return ""
}

func closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, n := range candidates {
		if d := levenshtein.Distance(s, n, nil); d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}

// number evaluates a number attribute.
func (l *loader) number(a *hcl.Attribute, ev *hcl.EvalContext) (*big.Float, bool) {
	v, diags := a.Expr.Value(ev)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return nil, false
	}
	nv, err := convert.Convert(v, cty.Number)
	if err != nil || nv.IsNull() || !nv.IsKnown() {
		l.errorf(a.Expr.Range().Ptr(), "Invalid "+a.Name, "%s must be a number.", a.Name)
		return nil, false
	}
	return nv.AsBigFloat(), true
}

func bigInt(n int64) *big.Float { return new(big.Float).SetInt64(n) }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
