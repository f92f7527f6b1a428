package interp

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/symbi-dev/symbi/lang"
	"github.com/symbi-dev/symbi/lockfile"
	"github.com/symbi-dev/symbi/plan"
)

// Options are a compilation's inputs beyond the files.
type Options struct {
	Vars     map[string]string // --var name=value, strongest
	VarFiles []string          // --var-file, later files win
	// Values are variables given as values rather than text (a test file's
	// variables blocks), each with where it was written: stronger than
	// --var-file and SYMBI_VAR_*, weaker than --var.
	Values    map[string]Value
	LookupEnv func(string) (string, bool)
	// Validate compiles with unknown values for variables that have no value,
	// so that validation and planning run the same checks.
	Validate bool
	// NoScope leaves Config.Scope nil: commands that only validate, plan or
	// run do not need the REPL's scope, and building it is a fifth of the
	// compile time of a large configuration.
	NoScope bool
	// SymbiVersion is checked against symbi { required_version }; empty
	// checks only the constraint's syntax.
	SymbiVersion string

	// lockFile is the lock file CompileContext found the place of.
	lockFile string
}

// Value is a variable's value given by a caller, and the range of the
// expression it came from, for diagnostics.
type Value struct {
	Value cty.Value
	Range hcl.Range
}

// Config is a compiled configuration.
type Config struct {
	Plan    *plan.Plan
	BaseDir string // the configuration directory; plan paths are relative to it
	// LockFile is where the configuration's lock file is, or would be
	// (plan.LockFilePath); Plan.Lock is what it pinned when it exists.
	LockFile string
	Files    map[string]*hcl.File // by the name used in diagnostics
	Scope    *hcl.EvalContext     // var.*, local.*, every block as an object, and the functions; nil with Options.NoScope
}

// Compile reads a .hcl file or a directory of them as one configuration and
// compiles it. It returns every diagnostic; Config is nil only when nothing
// could be read, and its Plan is not to be run when diagnostics have errors.
func Compile(path string, opts Options) (*Config, hcl.Diagnostics) {
	return CompileContext(context.Background(), path, opts)
}

// CompileContext is Compile with ctx bounding what may block: preparing
// the policies (OPA, Cedar) to check them.
func CompileContext(ctx context.Context, path string, opts Options) (*Config, hcl.Diagnostics) {
	baseDir, srcs, diags := readSources(path)
	if diags.HasErrors() {
		return nil, diags
	}
	lockFile := plan.LockFilePath(path, false)
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		lockFile = plan.LockFilePath(path, true)
	}
	opts.lockFile = lockFile
	cfg, ds := compileSources(ctx, baseDir, srcs, opts)
	return cfg, append(diags, ds...)
}

func readSources(path string) (string, []lang.Source, hcl.Diagnostics) {
	info, err := os.Stat(path)
	if err != nil {
		return "", nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read configuration",
			Detail:   err.Error(),
		}}
	}
	var names []string
	baseDir := path
	if info.IsDir() {
		matches, err := filepath.Glob(filepath.Join(path, "*.hcl"))
		if err != nil {
			return "", nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read configuration", Detail: err.Error()}}
		}
		// Test files (*.symbitest.hcl) live beside the configuration they
		// test and are not part of it; lock files are not configuration
		// either (symbi.lock.hcl, and the NAME.lock.hcl of each one-file
		// configuration beside it).
		for _, m := range matches {
			if !lang.IsTestFile(m) && !strings.HasSuffix(m, plan.LockFileSuffix) {
				names = append(names, m)
			}
		}
		if len(names) == 0 {
			detail := fmt.Sprintf("The directory %s holds no *.hcl files.", path)
			if len(matches) > 0 {
				detail = fmt.Sprintf("The directory %s holds no *.hcl files but test files (*%s).", path, lang.TestFileSuffix)
			}
			return "", nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No configuration files", Detail: detail}}
		}
	} else {
		baseDir = filepath.Dir(path)
		names = []string{path}
	}
	sort.Strings(names)
	var diags hcl.Diagnostics
	srcs := make([]lang.Source, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read configuration file",
				Detail:   err.Error(),
				Subject:  &hcl.Range{Filename: n, Start: hcl.InitialPos, End: hcl.InitialPos},
			})
			continue
		}
		srcs = append(srcs, lang.Source{Name: n, Bytes: b})
	}
	return baseDir, srcs, diags
}

// compiler holds one compilation's state.
type compiler struct {
	opts    Options
	baseDir string
	mod     *lang.Module
	diags   hcl.Diagnostics
	funcs   map[string]function.Function
	scope   *hcl.EvalContext
	symbols map[string]map[string]*lang.Block // kind -> name -> block
	varDecl map[string]*lang.Block
	locals  map[string]*hcl.Attribute
	reads   map[string]plan.FileRef // by path relative to baseDir
	rel     map[string]string       // diagnostic filename -> plan filename
	schemas map[string]error        // JSON Schema -> its compile result
	// unknown marks blocks with a value not known yet (validate without a
	// variable's value): checks that need the value wait for plan.
	unknown map[*lang.Block]bool
	p       *plan.Plan
}

func compileSources(ctx context.Context, baseDir string, srcs []lang.Source, opts Options) (*Config, hcl.Diagnostics) {
	lockFile := opts.lockFile
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	c := &compiler{
		opts:    opts,
		baseDir: baseDir,
		reads:   map[string]plan.FileRef{},
		rel:     map[string]string{},
		schemas: map[string]error{},
		unknown: map[*lang.Block]bool{},
		p:       &plan.Plan{FormatVersion: plan.FormatVersion},
	}
	mod, diags := lang.Parse(srcs)
	c.mod = mod
	c.diags = diags
	c.warnEmpty(srcs)
	c.funcs = c.functions()
	c.collectSymbols()
	c.evalVariables()
	c.evalLocals()
	c.buildSettings()
	c.buildBlocks()
	c.p.Sort()
	c.check(ctx)
	if lockFile != "" {
		c.readLock(lockFile)
	}
	c.recordSources(srcs)
	c.p.Sort()
	cfg := &Config{Plan: c.p, BaseDir: baseDir, Files: mod.Files, LockFile: lockFile}
	if !opts.NoScope {
		cfg.Scope = c.buildScope()
	}
	return cfg, c.diags
}

func (c *compiler) warnEmpty(srcs []lang.Source) {
	for _, s := range srcs {
		if len(s.Bytes) == 0 {
			c.diags = append(c.diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Empty configuration file",
				Detail:   fmt.Sprintf("%s is empty; it contributes nothing to the configuration.", s.Name),
				Subject:  &hcl.Range{Filename: s.Name, Start: hcl.InitialPos, End: hcl.InitialPos},
			})
		}
	}
}

// recordSources adds the configuration files (and every other file read,
// the lock file among them) to Plan.Files and computes the
// source hash over them in path order.
func (c *compiler) recordSources(srcs []lang.Source) {
	type entry struct {
		path string
		b    []byte
	}
	entries := make([]entry, 0, len(srcs))
	for _, s := range srcs {
		entries = append(entries, entry{c.relPath(s.Name), s.Bytes})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	h := sha256.New()
	var n [8]byte
	for _, e := range entries {
		binary.BigEndian.PutUint64(n[:], uint64(len(e.path)))
		h.Write(n[:])
		h.Write([]byte(e.path))
		binary.BigEndian.PutUint64(n[:], uint64(len(e.b)))
		h.Write(n[:])
		h.Write(e.b)
		c.reads[e.path] = plan.NewFileRef(e.path, e.b)
	}
	c.p.SourceHash = hex.EncodeToString(h.Sum(nil))
	c.p.Files = make([]plan.FileRef, 0, len(c.reads))
	for _, f := range c.reads {
		c.p.Files = append(c.p.Files, f)
	}
}

// relPath turns a path as read into one relative to the configuration
// directory, with forward slashes, so plans do not depend on where they were made.
func (c *compiler) relPath(name string) string {
	if r, ok := c.rel[name]; ok {
		return r
	}
	r := name
	if rel, err := filepath.Rel(c.baseDir, name); err == nil {
		r = rel
	}
	r = filepath.ToSlash(r)
	c.rel[name] = r
	return r
}

// prange converts a source range into a plan range.
func (c *compiler) prange(r hcl.Range) plan.Range {
	if r.Filename == "" {
		return plan.Range{}
	}
	return plan.Range{Filename: c.relPath(r.Filename), Line: r.Start.Line, Column: r.Start.Column}
}

// LoadPlanFile reads a plan saved by `symbi plan -out`.
func LoadPlanFile(path string) (*plan.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return plan.Decode(b)
}

func (c *compiler) errorf(subject *hcl.Range, summary, format string, args ...any) {
	c.diags = append(c.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: subject})
}

func (c *compiler) warnf(subject *hcl.Range, summary, format string, args ...any) {
	c.diags = append(c.diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: subject})
}

// readLock reads the configuration's lock file, when it has one, into the
// plan: what it pins, and its digest, so the plan changes when a pinned
// tool does. Its mistakes are errors of the configuration, with their
// place in the file. It is one of the configuration's files: no builtin
// file tool can write it.
func (c *compiler) readLock(path string) {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		c.diags = append(c.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot read the lock file",
			Detail:   err.Error(),
			Subject:  &hcl.Range{Filename: path, Start: hcl.InitialPos, End: hcl.InitialPos},
		})
		return
	}
	l, diags := lockfile.Parse(path, src)
	c.diags = append(c.diags, diags...)
	if f, _ := hclsyntax.ParseConfig(src, path, hcl.InitialPos); f != nil && c.mod.Files != nil {
		c.mod.Files[path] = f // for the diagnostics' snippets
	}
	if diags.HasErrors() {
		return
	}
	rel := c.relPath(path)
	l.File = rel
	l.Digest = lockfile.Digest(src)
	c.p.Lock = l
	c.reads[rel] = plan.NewFileRef(rel, src)
}
